package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"gpulet.dev/test/cluster/internal/node"
)

// The passthrough scenario needs the simulator's mixed-vfio machine: GPUs
// 0-3 on the nvidia driver (NVML sees them), GPUs 4-7 on vfio-pci, each
// alone in its IOMMU group (only sysfs shows them). `gpulet sim render`
// lays out the node's sysfs tree and /dev/vfio (character devices) under
// the rendered GPU root, which gpulet's pod sees through its driver-root
// volume. ctest's cluster_vfio runs it on a cluster of its own.
const vfioMachine = "mixed-vfio"

// vfioResource is what gpulet advertises the H100 SXM5s on vfio-pci as.
const vfioResource = "nvidia.com/GH100_H100_SXM5_80GB"

func init() {
	register(Scenario{
		Name:    "vfio-mixed",
		Machine: vfioMachine,
		Doc: "a passthrough section on a mixed node: 4 pods asking for " + vfioResource +
			" each get one GPU's /dev/vfio group node and PCI_RESOURCE_NVIDIA_COM_*, 4 pods asking for " +
			"nvidia.com/gpu each get one container GPU; neither gets the other's. A GPU whose group is " +
			"made non-viable leaves the node's allocatable, and comes back once bound again",
		Run: vfioMixedScenario,
	})
}

// vfioConfig selects every GPU on vfio-pci, read through the driver-root
// volume (/driver-root in gpulet's container); the device specs name the
// rendered nodes by their path on the node.
func vfioConfig(n *node.Node) string {
	return fmt.Sprintf(`version: v1
flags:
  migStrategy: none
  plugin:
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
passthrough:
  devices: [vfio-pci]
  sysRoot: /driver-root/sys
  devRoot: /driver-root/dev
  hostDevRoot: %s
  resyncPeriod: 1s
`, filepath.Join(n.Cfg.Paths.GPURoot(), "dev"))
}

var pciAddress = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// vfioGPUs returns the rendered node's NVIDIA display functions bound to
// vfio-pci: PCI address -> IOMMU group.
func vfioGPUs(t *T) map[string]string {
	sys := filepath.Join(t.N.Cfg.Paths.GPURoot(), "sys")
	entries, err := os.ReadDir(filepath.Join(sys, "bus/pci/drivers/vfio-pci"))
	if err != nil {
		t.Fatalf("%v", err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if !pciAddress.MatchString(e.Name()) {
			continue
		}
		dev := filepath.Join(sys, "bus/pci/devices", e.Name())
		vendor, _ := os.ReadFile(filepath.Join(dev, "vendor"))
		class, _ := os.ReadFile(filepath.Join(dev, "class"))
		if strings.TrimSpace(string(vendor)) != "0x10de" || !strings.HasPrefix(string(class), "0x03") {
			continue
		}
		group, err := os.Readlink(filepath.Join(dev, "iommu_group"))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out[e.Name()] = filepath.Base(group)
	}
	return out
}

func vfioMixedScenario(t *T) {
	n := t.N
	pt := vfioGPUs(t)
	ctr := len(n.Machine.GPUs)
	if len(pt) == 0 || ctr == 0 {
		t.Fatalf("machine %s: %d GPU(s) on vfio-pci, %d for containers; want both", n.Cfg.Machine, len(pt), ctr)
	}
	start := time.Now()
	reconfigure(t, vfioConfig(n), map[string]int{"nvidia.com/gpu": ctr, vfioResource: len(pt)})
	defer restoreNoSharing(t)
	t.Figure("rollout with passthrough -> both resources allocatable", time.Since(start))

	start = time.Now()
	vfioPodsUpToCapacity(t, pt, ctr)
	t.Figure(fmt.Sprintf("%d passthrough + %d container pods: create -> checked -> gone", len(pt), ctr), time.Since(start))

	start = time.Now()
	vfioNonViable(t, pt)
	t.Figure("non-viable group: out of allocatable and back", time.Since(start))
}

// vfioPodsUpToCapacity runs one pod per passthrough GPU and one per
// container GPU at once and checks what each container sees.
func vfioPodsUpToCapacity(t *T, pt map[string]string, ctr int) {
	n := t.N
	var names, ptPods, ctrPods []string
	var pods []*corev1.Pod
	for i := 0; i < len(pt); i++ {
		ptPods = append(ptPods, fmt.Sprintf("vfio-%d", i))
		pods = append(pods, gpuPod(ptPods[i], 1, vfioResource))
	}
	for i := 0; i < ctr; i++ {
		ctrPods = append(ctrPods, fmt.Sprintf("ctr-%d", i))
		pods = append(pods, gpuPod(ctrPods[i], 1, "nvidia.com/gpu"))
	}
	names = append(append(names, ptPods...), ctrPods...)
	// Deleted however the checks end (createAndWaitRunning may end the
	// scenario half-way).
	defer deletePods(t, names...)
	createAndWaitRunning(t, pods...)

	envName := "PCI_RESOURCE_" + strings.NewReplacer(".", "_", "/", "_").Replace(strings.ToUpper(vfioResource))
	seen := map[string]string{}
	for _, name := range ptPods {
		ids := allocatedDevices(t, name, vfioResource)
		if other := allocatedDevices(t, name, "nvidia.com/gpu"); len(other) > 0 {
			t.Errorf("%s: the kubelet also allocated container GPUs %v", name, other)
		}
		if len(ids) != 1 {
			t.Errorf("%s: the kubelet allocated %v, want one passthrough GPU", name, ids)
			continue
		}
		id := ids[0]
		group, ok := pt[id]
		if !ok {
			t.Errorf("%s: allocated %s, not a GPU on vfio-pci (%v)", name, id, sorted(keys(pt)))
			continue
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("%s and %s both got %s", prev, name, id)
		}
		seen[id] = name
		r := podReport(t, name)
		expectSet(t, name+": /dev/vfio", set(r["vfio"]), map[string]bool{"vfio": true, group: true})
		expectSet(t, name+": /dev/nvidia*", nvidiaDevs(r["dev"]), map[string]bool{})
		env := envMap(r["env"])
		if env[envName] != id {
			t.Errorf("%s: %s=%q, want %q", name, envName, env[envName], id)
		}
		if v, ok := env["NVIDIA_VISIBLE_DEVICES"]; ok {
			t.Errorf("%s: NVIDIA_VISIBLE_DEVICES=%s, want unset", name, v)
		}
	}
	for _, name := range ctrPods {
		ids := allocatedDevices(t, name, "nvidia.com/gpu")
		if other := allocatedDevices(t, name, vfioResource); len(other) > 0 {
			t.Errorf("%s: the kubelet also allocated passthrough GPUs %v", name, other)
		}
		if len(ids) != 1 {
			t.Errorf("%s: the kubelet allocated %v, want one container GPU", name, ids)
			continue
		}
		if prev, dup := seen[ids[0]]; dup {
			t.Errorf("%s and %s both got %s", prev, name, ids[0])
		}
		seen[ids[0]] = name
		minor := -1
		for _, g := range n.Machine.GPUs {
			if g.UUID == ids[0] {
				minor = g.Minor
			}
		}
		if minor < 0 {
			t.Errorf("%s: allocated %s, not a GPU NVML sees", name, ids[0])
			continue
		}
		want := map[string]bool{fmt.Sprintf("nvidia%d", minor): true}
		for d := range controlNodes {
			want[d] = true
		}
		r := podReport(t, name)
		expectSet(t, name+": /dev/nvidia*", nvidiaDevs(r["dev"]), want)
		expectSet(t, name+": /dev/vfio", set(r["vfio"]), map[string]bool{})
		for k := range envMap(r["env"]) {
			if strings.HasPrefix(k, "PCI_RESOURCE_") {
				t.Errorf("%s: %s is set", name, k)
			}
		}
	}
}

// vfioNonViable points one passthrough GPU's driver link at nvidia, as if
// it had been bound back by hand, and expects gpulet to advertise it
// Unhealthy with the reason (the node's allocatable drops by one), then
// restores the link and expects it back.
func vfioNonViable(t *T, pt map[string]string) {
	n := t.N
	addrs := sorted(keys(pt))
	addr := addrs[0]
	link := filepath.Join(n.Cfg.Paths.GPURoot(), "sys/bus/pci/devices", addr, "driver")
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatalf("%v", err)
	}
	nvidia := filepath.Join(filepath.Dir(target), "nvidia")
	if err := replaceLink(link, nvidia); err != nil {
		t.Fatalf("%v", err)
	}
	restored := false
	defer func() {
		if !restored {
			_ = replaceLink(link, target)
		}
	}()
	expectAllocatable(t, vfioResource, len(pt)-1)
	pod, err := n.GpuletPod(t.Ctx)
	if err != nil || pod == nil {
		t.Fatalf("no gpulet pod (%v)", err)
	}
	// The line gpulet logs when a served device's health changes.
	reason := fmt.Sprintf("passthrough GPU %s is unhealthy: IOMMU group %s: %s (GPU, 10de:", addr, pt[addr], addr)
	if err := n.WaitInLog(t.Ctx, pod.Name, reason, 1); err != nil {
		t.Errorf("%v", err)
	}
	if err := replaceLink(link, target); err != nil {
		t.Fatalf("%v", err)
	}
	restored = true
	expectAllocatable(t, vfioResource, len(pt))
	if err := n.WaitInLog(t.Ctx, pod.Name, "passthrough GPU "+addr+" is healthy again", 1); err != nil {
		t.Errorf("%v", err)
	}
}

// replaceLink points link at target in one rename, as the kernel's driver
// link changes at once.
func replaceLink(link, target string) error {
	tmp := link + ".new"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

func keys(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func set(lines []string) map[string]bool {
	out := map[string]bool{}
	for _, l := range lines {
		for _, f := range strings.Fields(l) {
			out[f] = true
		}
	}
	return out
}
