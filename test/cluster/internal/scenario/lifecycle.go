package scenario

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

func init() {
	register(Scenario{
		Name: "kubelet-restart",
		Doc: "the kubelet restarts with pods running: gpulet registers again once, " +
			"the pods keep their devices, a new pod gets a free GPU",
		Run: kubeletRestartScenario,
	})
	register(Scenario{
		Name: "gpulet-recreate",
		Doc:  "gpulet's pod is deleted and the DaemonSet recreates it: running pods keep their GPUs, allocatable returns",
		Run:  gpuletRecreateScenario,
	})
	register(Scenario{
		Name: "xid",
		Doc: "an Xid lowers the node's allocatable in the API server and takes exactly that GPU out of the kubelet's " +
			"allocatable devices, the quiet period brings it back; a pod on that GPU keeps running; a lost GPU " +
			"(sim lose) goes out too, by ID, and comes back after sim restore",
		Run: xidScenario,
	})
}

// containerID is a running pod's container ID and restart count.
func containerID(t *T, name string) (string, int32) {
	p, err := t.N.Client.CoreV1().Pods(ns).Get(t.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 {
		t.Fatalf("pod %s is %s", name, p.Status.Phase)
	}
	cs := p.Status.ContainerStatuses[0]
	return cs.ContainerID, cs.RestartCount
}

// expectUndisturbed checks that a pod still runs the same container with
// the same devices.
func expectUndisturbed(t *T, name, cid string, devices []string) {
	got, restarts := containerID(t, name)
	if got != cid || restarts != 0 {
		t.Errorf("pod %s: container %s (restarts %d), want %s undisturbed", name, got, restarts, cid)
	}
	now := allocatedDevices(t, name, "nvidia.com/gpu")
	if fmt.Sprint(now) != fmt.Sprint(devices) {
		t.Errorf("pod %s: devices %v, want %v", name, now, devices)
	}
}

func expectDisjoint(t *T, a, b []string) {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				t.Errorf("device %s given twice", x)
			}
		}
	}
}

func kubeletRestartScenario(t *T) {
	n := t.N
	createAndWaitRunning(t, gpuPod("before-restart", 2, "nvidia.com/gpu"))
	defer deletePods(t, "before-restart", "after-restart")
	devs := allocatedDevices(t, "before-restart", "nvidia.com/gpu")
	cid, _ := containerID(t, "before-restart")
	pod, err := n.GpuletPod(t.Ctx)
	if err != nil || pod == nil {
		t.Fatalf("no gpulet pod: %v", err)
	}
	regs, err := n.Registrations(t.Ctx, pod.Name, "nvidia.com/gpu")
	if err != nil {
		t.Fatalf("%v", err)
	}
	start := time.Now()
	n.StopKubelet()
	if err := n.StartKubelet(); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.WaitRegistrations(t.Ctx, pod.Name, "nvidia.com/gpu", regs+1); err != nil {
		t.Fatalf("%v", err)
	}
	t.Figure("kubelet restart -> gpulet registered again", time.Since(start))
	if err := n.WaitAllocatable(t.Ctx, "nvidia.com/gpu", len(n.Machine.GPUs)); err != nil {
		t.Fatalf("%v", err)
	}
	createAndWaitRunning(t, gpuPod("after-restart", 1, "nvidia.com/gpu"))
	expectUndisturbed(t, "before-restart", cid, devs)
	expectDisjoint(t, devs, allocatedDevices(t, "after-restart", "nvidia.com/gpu"))
	if got, _ := n.Registrations(t.Ctx, pod.Name, "nvidia.com/gpu"); got != regs+1 {
		t.Errorf("gpulet registered %d times in all, want %d (once more after the restart)", got, regs+1)
	}
	if p, _ := n.GpuletPod(t.Ctx); p == nil || p.UID != pod.UID {
		t.Errorf("gpulet's pod changed across the kubelet restart")
	}
}

func gpuletRecreateScenario(t *T) {
	n := t.N
	createAndWaitRunning(t, gpuPod("keeps-gpu", 1, "nvidia.com/gpu"))
	defer deletePods(t, "keeps-gpu", "after-recreate")
	devs := allocatedDevices(t, "keeps-gpu", "nvidia.com/gpu")
	cid, _ := containerID(t, "keeps-gpu")
	old, err := n.GpuletPod(t.Ctx)
	if err != nil || old == nil {
		t.Fatalf("no gpulet pod: %v", err)
	}
	start := time.Now()
	if err := n.Client.CoreV1().Pods(old.Namespace).Delete(t.Ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete gpulet's pod: %v", err)
	}
	if err := n.WaitGpuletRunning(t.Ctx, string(old.UID)); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.WaitResources(t.Ctx, map[string]int{"nvidia.com/gpu": len(n.Machine.GPUs)}); err != nil {
		t.Fatalf("%v", err)
	}
	t.Figure("gpulet pod deleted -> GPUs allocatable again", time.Since(start))
	expectUndisturbed(t, "keeps-gpu", cid, devs)
	createAndWaitRunning(t, gpuPod("after-recreate", 1, "nvidia.com/gpu"))
	expectDisjoint(t, devs, allocatedDevices(t, "after-recreate", "nvidia.com/gpu"))
}

// healthConfig is the no-sharing config with a short quiet period, long
// enough for the kubelet's status updates (every second) to show the
// unhealthy GPU under load.
const healthConfig = `version: v1
flags:
  migStrategy: none
  failOnInitError: true
  plugin:
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
health:
  quietPeriod: 10s
`

func xidScenario(t *T) {
	n := t.N
	uuids := profileGPUs(t)
	gpus := len(uuids)
	full := map[string]int{"nvidia.com/gpu": gpus}
	if err := n.Reconfigure(t.Ctx, healthConfig, full); err != nil {
		t.Fatalf("%v", err)
	}
	defer func() {
		if err := n.Reconfigure(t.Ctx, node.NoSharingConfig, full); err != nil {
			t.Errorf("restoring the config: %v", err)
		}
	}()
	createAndWaitRunning(t, gpuPod("on-sick-gpu", 1, "nvidia.com/gpu"))
	defer deletePods(t, "on-sick-gpu")
	devs := allocatedDevices(t, "on-sick-gpu", "nvidia.com/gpu")
	cid, _ := containerID(t, "on-sick-gpu")
	if len(devs) != 1 {
		t.Fatalf("the kubelet allocated %v to on-sick-gpu, want 1 device", devs)
	}
	sick := devs[0]
	idx := profileIndex(t, uuids, sick)

	// By ID: the sick GPU leaves the kubelet's allocatable devices, and
	// only it; its neighbours stay.
	start := time.Now()
	if err := n.Sim("xid", "--gpu", fmt.Sprint(idx), "--xid", "62"); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.WaitAllocatable(t.Ctx, "nvidia.com/gpu", gpus-1); err != nil {
		t.Fatalf("after Xid 62: %v", err)
	}
	t.Figure("Xid -> allocatable lowered in the API server", time.Since(start))
	if err := waitAllocatableIDs(t, "nvidia.com/gpu", except(uuids, sick)); err != nil {
		t.Errorf("after Xid 62 on GPU %d (%s): %v", idx, sick, err)
	}

	// Meanwhile another GPU falls off the bus and comes back. gpulet
	// recovers a restored GPU only when one of its probes saw it lost:
	// allocatable dropping says one did, so the restore waits for that.
	lostIdx := (idx + 1) % gpus
	lost := uuids[lostIdx]
	if err := n.Sim("lose", "--gpu", fmt.Sprint(lostIdx)); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.WaitAllocatable(t.Ctx, "nvidia.com/gpu", gpus-2); err != nil {
		t.Fatalf("after sim lose --gpu %d: %v", lostIdx, err)
	}
	if err := waitAllocatableIDs(t, "nvidia.com/gpu", except(uuids, sick, lost)); err != nil {
		t.Errorf("after sim lose --gpu %d (%s), with GPU %d still sick: %v", lostIdx, lost, idx, err)
	}
	if err := n.Sim("restore", "--gpu", fmt.Sprint(lostIdx)); err != nil {
		t.Fatalf("%v", err)
	}
	// Both come back once their quiet periods (from the Xid, from the
	// first probe that saw the lost GPU answer again) have passed.
	if err := n.WaitAllocatable(t.Ctx, "nvidia.com/gpu", gpus); err != nil {
		got, _ := n.Allocatable(t.Ctx, "nvidia.com/gpu")
		t.Fatalf("after the quiet period and sim restore --gpu %d: %v (it is %d)", lostIdx, err, got)
	}
	if err := waitAllocatableIDs(t, "nvidia.com/gpu", uuids); err != nil {
		t.Errorf("after the quiet period and sim restore --gpu %d: %v", lostIdx, err)
	}
	expectUndisturbed(t, "on-sick-gpu", cid, devs)
}
