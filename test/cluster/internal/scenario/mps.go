package scenario

// sharing.mps as an operator of NVIDIA's plugin uses it, with no
// mps-control-daemon of NVIDIA's: gpulet runs the MPS control daemon of
// each replicated GPU itself (docs/sharing.md, "sharing.mps"). The
// simulated nvidia-cuda-mps-control records, in its log under the MPS root,
// how it was started, the limits gpulet gave it and every command a client
// sent; the pods reach it through the pipe directory their Allocate answer
// mounted.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"gpulet.dev/test/cluster/internal/sandbox"
)

func init() {
	register(Scenario{
		Name: "mps-replicas",
		Doc: "sharing.mps, GPU 0 shared 2 ways as nvidia.com/gpu.shared: gpulet's own control daemon for " +
			"GPU 0 holds NVIDIA's limits (memory / 2, 50%); two pods run on GPU 0 and each reaches that " +
			"daemon through its pipe mount; killing the daemon by PID makes both replicas Unhealthy in the " +
			"kubelet's view, and they come back when gpulet has started it again",
		Run: mpsReplicasScenario,
	})
}

const mpsShared = "nvidia.com/gpu.shared"

// mpsConfig shares GPU 0 two ways with MPS under its own name.
func mpsConfig(root string) string {
	return fmt.Sprintf(`version: v1
flags:
  migStrategy: none
  failOnInitError: true
  mpsRoot: %s
  plugin:
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
sharing:
  mps:
    resources:
    - name: nvidia.com/gpu
      rename: %s
      devices: ["0"]
      replicas: 2
`, root, mpsShared)
}

// mpsClientScript sends one command to the container's MPS control daemon
// through the pipe directory its Allocate answer gave it, then reports.
const mpsClientScript = `echo get_default_active_thread_percentage > "$CUDA_MPS_PIPE_DIRECTORY/control" && ` + reportScript

func mpsReplicasScenario(t *T) {
	n := t.N
	uuids := profileGPUs(t)
	root := n.Cfg.Paths.MpsRoot()
	gpu0 := uuids[0]
	reconfigure(t, mpsConfig(root), map[string]int{"nvidia.com/gpu": len(uuids) - 1, mpsShared: 2})
	defer restoreNoSharing(t)
	replicas := replicaIDs(uuids[:1], 2)
	expectAllocatableIDs(t, "with GPU 0's daemon up", except(uuids, gpu0))
	if err := waitAllocatableIDs(t, mpsShared, replicas); err != nil {
		t.Fatalf("with GPU 0's daemon up: %v", err)
	}

	// The daemon gpulet started for GPU 0, with NVIDIA's limits.
	log := filepath.Join(root, gpu0, "log", "control.log")
	memMiB := n.Machine.GPUs[0].MemoryBytes / 2 / 1024 / 1024
	limits := []string{
		fmt.Sprintf("command set_default_device_pinned_mem_limit 0 %dM", memMiB),
		"command set_default_active_thread_percentage 50",
	}
	text := waitMpsLog(t, log, limits...)
	if !strings.Contains(text, "CUDA_VISIBLE_DEVICES="+gpu0+" ") {
		t.Errorf("GPU 0's daemon was not started for %s alone:\n%s", gpu0, text)
	}

	// Two pods on GPU 0, each a client of that daemon.
	a, b := mpsPod("mps-a"), mpsPod("mps-b")
	d := createAndWaitRunning(t, a, b)
	t.Figure("mps-replicas: 2 pods on one GPU -> Running", d)
	defer deletePods(t, a.Name, b.Name)
	for _, name := range []string{a.Name, b.Name} {
		ids := allocatedDevices(t, name, mpsShared)
		if len(ids) != 1 || !strings.HasPrefix(ids[0], gpu0+"::") {
			t.Errorf("%s was allocated %v, want one replica of GPU 0", name, ids)
		}
		env := envMap(podReport(t, name)["env"])
		if got, want := env["CUDA_MPS_PIPE_DIRECTORY"], "/mps/"+mpsShared+"/pipe"; got != want {
			t.Errorf("%s: CUDA_MPS_PIPE_DIRECTORY=%q, want %q", name, got, want)
		}
	}
	query := "command get_default_active_thread_percentage"
	waitMpsLogCount(t, log, query, 2)

	// Killed by the PID its own record names: both replicas Unhealthy in
	// the kubelet's view, then back once gpulet started the daemon again.
	pid := mpsDaemonPid(t, waitMpsLog(t, log, "start -f pid="))
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill GPU 0's MPS control daemon (%d): %v", pid, err)
	}
	if err := waitAllocatableIDs(t, mpsShared, nil); err != nil {
		t.Errorf("after killing GPU 0's daemon: %v", err)
	}
	t.Figure("mps-replicas: daemon killed -> replicas Unhealthy", time.Since(start))
	if err := waitAllocatableIDs(t, mpsShared, replicas); err != nil {
		t.Errorf("after gpulet restarted GPU 0's daemon: %v", err)
	}
	t.Figure("mps-replicas: daemon killed -> replicas Healthy again", time.Since(start))
	expectAllocatableIDs(t, "while GPU 0's daemon restarted", except(uuids, gpu0))
	if c := strings.Count(waitMpsLog(t, log), "start -f pid="); c < 2 {
		t.Errorf("GPU 0's daemon was started %d times, want a restart", c)
	}
}

// mpsPod is a pod with one replica of GPU 0 that talks to its daemon.
func mpsPod(name string) *corev1.Pod {
	p := gpuPod(name, 1, mpsShared)
	p.Spec.Containers[0].Command = []string{"/bin/sh", "-c", mpsClientScript}
	return p
}

// waitMpsLog waits until the daemon's log holds every line of want (in
// order) and returns it.
func waitMpsLog(t *T, path string, want ...string) string {
	var text string
	err := t.N.WaitFor(t.Ctx, fmt.Sprintf("%s to record %q", path, want), 60*time.Second, func(context.Context) (bool, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, nil
		}
		text = string(b)
		rest := text
		for _, w := range want {
			i := strings.Index(rest, w)
			if i < 0 {
				return false, nil
			}
			rest = rest[i+len(w):]
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return text
}

func waitMpsLogCount(t *T, path, line string, count int) {
	var text string
	err := t.N.WaitFor(t.Ctx, fmt.Sprintf("%s to record %q %d times", path, line, count), 60*time.Second, func(context.Context) (bool, error) {
		b, _ := os.ReadFile(path)
		text = string(b)
		return strings.Count(text, line) >= count, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
}

// mpsDaemonPid finds, among the fixture's processes, the daemon the log's
// last start names: a child of gpulet whose PID in gpulet's PID namespace
// (the last field of its NSpid) is the one recorded.
func mpsDaemonPid(t *T, log string) int {
	pod, err := t.N.GpuletPod(t.Ctx)
	if err != nil || pod == nil {
		t.Fatalf("no gpulet pod: %v", err)
	}
	gpulet, err := t.N.GpuletPid(pod)
	if err != nil {
		t.Fatalf("%v", err)
	}
	at := strings.LastIndex(log, "start -f pid=")
	fields := strings.Fields(log[at+len("start -f pid="):])
	inner, err := strconv.Atoi(fields[0])
	if err != nil {
		t.Fatalf("no PID in the daemon's log: %v", err)
	}
	for _, pid := range sandbox.OtherPids() {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		var nspid []string
		parent := ""
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "NSpid:"); ok {
				nspid = strings.Fields(v)
			}
			if v, ok := strings.CutPrefix(l, "PPid:"); ok {
				parent = strings.TrimSpace(v)
			}
		}
		if len(nspid) > 1 && nspid[len(nspid)-1] == strconv.Itoa(inner) && parent == strconv.Itoa(gpulet) {
			return pid
		}
	}
	t.Fatalf("no process is GPU 0's MPS control daemon (PID %d in gpulet's namespace)", inner)
	return 0
}
