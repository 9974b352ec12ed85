package scenario

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gpulet.dev/test/cluster/internal/node"
)

// The MIG scenarios need a machine with MIG-enabled GPUs: the simulator's
// a100-mig (GPU 0: 3g.20gb + 2g.10gb + 1g.5gb, GPU 1: 7x 1g.5gb, GPU 2:
// 2x 3g.20gb, GPU 3 whole). ctest's cluster_mig runs them on a cluster of
// their own (--machine a100-mig).
const migMachine = "a100-mig"

func init() {
	register(Scenario{
		Name:    "mig-pod",
		Machine: migMachine,
		Doc: "migStrategy mixed through the ConfigMap: allocatable per MIG profile matches the machine; " +
			"a pod asking for nvidia.com/mig-1g.5gb runs and sees exactly its MIG device",
		Run: migPodScenario,
	})
	register(Scenario{
		Name:    "mig-reload",
		Machine: migMachine,
		Doc: "migStrategy mixed, Xid 79 on GPU 1, then an unchanged reload (SIGHUP): GPU 1's MIG devices " +
			"stay unhealthy (allocatable of mig-1g.5gb stays lowered), nothing registers again",
		Run: migReloadScenario,
	})
}

const migMixedConfig = `version: v1
flags:
  migStrategy: mixed
  failOnInitError: true
  plugin:
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
`

// migResources is what the machine advertises under migStrategy mixed:
// one nvidia.com/mig-<profile> per MIG device, nvidia.com/gpu per GPU
// without MIG.
func migResources(n *node.Node) map[string]int {
	want := map[string]int{"nvidia.com/gpu": 0}
	for _, g := range n.Machine.GPUs {
		if !g.MigEnabled {
			want["nvidia.com/gpu"]++
			continue
		}
		for _, m := range g.MigDevices {
			want["nvidia.com/mig-"+m.Profile]++
		}
	}
	return want
}

// migMinors reads the rendered node's /proc/driver/nvidia-caps/mig-minors
// ("gpu0/gi7/access 66"): capability path -> minor.
func migMinors(t *T) map[string]int {
	f, err := os.Open(filepath.Join(t.N.Cfg.Paths.GPURoot(), "proc/driver/nvidia-caps/mig-minors"))
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer f.Close()
	out := map[string]int{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		var path string
		var minor int
		if _, err := fmt.Sscanf(s.Text(), "%s %d", &path, &minor); err == nil {
			out[path] = minor
		}
	}
	return out
}

func migPodScenario(t *T) {
	n := t.N
	want := migResources(n)
	if want["nvidia.com/mig-1g.5gb"] == 0 {
		t.Fatalf("machine %s has no 1g.5gb MIG device", n.Cfg.Machine)
	}
	reconfigure(t, migMixedConfig, want)
	defer restoreNoSharing(t)
	for res, count := range want {
		expectAllocatable(t, res, count)
	}

	createAndWaitRunning(t, gpuPod("mig-pod", 1, "nvidia.com/mig-1g.5gb"))
	defer deletePods(t, "mig-pod")
	ids := allocatedDevices(t, "mig-pod", "nvidia.com/mig-1g.5gb")
	if len(ids) != 1 {
		t.Fatalf("the kubelet allocated %v to mig-pod, want one MIG device", ids)
	}
	minors := migMinors(t)
	wantDev := map[string]bool{}
	wantRules := map[string]bool{}
	for name, rule := range controlNodes {
		wantDev[name] = true
		wantRules[rule] = true
	}
	wantCaps := map[string]bool{}
	found := false
	for _, g := range n.Machine.GPUs {
		for _, m := range g.MigDevices {
			if m.UUID != ids[0] {
				continue
			}
			found = true
			wantDev[fmt.Sprintf("nvidia%d", g.Minor)] = true
			wantDev["nvidia-caps"] = true // the directory of the capability nodes
			wantRules[fmt.Sprintf("c 195:%d", g.Minor)] = true
			for _, c := range []string{
				fmt.Sprintf("gpu%d/gi%d/access", g.Minor, m.GI),
				fmt.Sprintf("gpu%d/gi%d/ci%d/access", g.Minor, m.GI, m.CI),
			} {
				minor, ok := minors[c]
				if !ok {
					t.Fatalf("mig-minors has no %s", c)
				}
				wantCaps[fmt.Sprintf("nvidia-cap%d", minor)] = true
				wantRules[fmt.Sprintf("c 235:%d", minor)] = true
			}
		}
	}
	if !found {
		t.Fatalf("allocated device %s is not a MIG device of the machine", ids[0])
	}
	r := podReport(t, "mig-pod")
	expectSet(t, "mig-pod: /dev/nvidia*", nvidiaDevs(r["dev"]), wantDev)
	expectSet(t, "mig-pod: /dev/nvidia-caps", nvidiaDevs(r["nvidia-caps"]), wantCaps)
	expectSet(t, "mig-pod: device cgroup rules for NVIDIA majors", nvidiaRules(r["cgroup devices"]), wantRules)
	// gpulet answered Allocate with NVIDIA_VISIBLE_DEVICES=<MIG UUID>;
	// gpulet-runtime injected that device and, as nvidia-container-runtime
	// does after an injection, left the variable "void" in the container.
	cid, _ := containerID(t, "mig-pod")
	_, cid, _ = strings.Cut(cid, "://")
	rlog, err := os.ReadFile(n.Cfg.Paths.RuntimeLog())
	if err != nil {
		t.Fatalf("%v", err)
	}
	if line := fmt.Sprintf("container %s: injected nvidia.com/gpu=%s\n", cid, ids[0]); !strings.Contains(string(rlog), line) {
		t.Errorf("gpulet-runtime's log has no %q", strings.TrimSpace(line))
	}
}

func migReloadScenario(t *T) {
	n := t.N
	want := migResources(n)
	reconfigure(t, migMixedConfig, want)
	defer restoreNoSharing(t)
	var resources []string
	for res, count := range want {
		if count > 0 {
			resources = append(resources, res)
		}
	}
	g := currentGpulet(t, resources...)
	// GPU 1's MIG devices.
	lost := map[string]int{}
	for _, gpu := range n.Machine.GPUs {
		if gpu.Index == 1 {
			for _, m := range gpu.MigDevices {
				lost["nvidia.com/mig-"+m.Profile]++
			}
		}
	}
	if len(lost) == 0 {
		t.Fatalf("GPU 1 of %s has no MIG devices", n.Cfg.Machine)
	}
	if err := n.Sim("xid", "--gpu", "1", "--xid", "79"); err != nil {
		t.Fatalf("%v", err)
	}
	after := map[string]int{}
	for res, count := range want {
		after[res] = count - lost[res]
		expectAllocatable(t, res, after[res])
	}
	var watches []*allocatableWatch
	for res := range lost {
		watches = append(watches, watchAllocatable(t, res))
	}
	g.reload(t, "", node.ReloadAccepted)
	for _, w := range watches {
		w.waitStatusUpdates(t)
	}
	for _, w := range watches {
		lo, hi := w.stop()
		if lo != int64(after[w.resource]) || hi != int64(after[w.resource]) {
			t.Errorf("allocatable %s went through %d..%d across the reload, want %d (GPU 1's MIG devices unhealthy)",
				w.resource, lo, hi, after[w.resource])
		}
	}
	for res, count := range after {
		if got, err := n.Allocatable(t.Ctx, res); err != nil || got != int64(count) {
			t.Errorf("allocatable %s = %d (%v) after the reload, want %d", res, got, err, count)
		}
	}
	g.expectSame(t)
}
