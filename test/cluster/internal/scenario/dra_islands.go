package scenario

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

// The DRA scenarios on whole GPUs need the simulator's islands-16 (16
// A100-SXM4-80GB as two NVSwitch islands of 8); ctest's cluster_dra runs
// them on a cluster of their own (--dra --machine islands-16).
const draMachine = "islands-16"

func init() {
	register(Scenario{
		Name: "dra-nvlink", Machine: draMachine, DRA: true,
		Doc: "6 pods from a ResourceClaimTemplate asking 2 GPUs with matchAttribute nvlinkDomain: each gets 2 GPUs " +
			"of one island of the machine, both islands are used, each container sees its 2 GPUs; " +
			"deleting the pods unprepares the claims",
		Run: draNvlinkScenario,
	})
	register(Scenario{
		Name: "dra-shared", Machine: draMachine, DRA: true,
		Doc: "one ResourceClaim used by two pods: both run with the same GPU; deleting them unprepares " +
			"and deallocates the claim",
		Run: draSharedScenario,
	})
	register(Scenario{
		Name: "dra-extended-resource", Machine: draMachine, DRA: true,
		Doc: "a pod asking nvidia.com/gpu: 1, no claim, is served through gpu.nvidia.com's extendedResourceName " +
			"and runs with one GPU",
		Run: draExtendedScenario,
	})
	register(Scenario{
		Name: "dra-unsatisfiable", Machine: draMachine, DRA: true,
		Doc: "a claim for a GPU with at least 100Gi (the machine's have 80Gi) leaves its pod Pending, " +
			"unschedulable with the scheduler's reason",
		Run: draUnsatisfiableScenario,
	})
	register(Scenario{
		Name: "dra-xid", Machine: draMachine, DRA: true,
		Doc: "Xid 79 on GPU 5 takes gpu-5 out of the ResourceSlices; a claim selecting index 5 then waits " +
			"unschedulable, a claim for all GPUs gets the other 15 and never gpu-5",
		Run: draXidScenario,
	})
}

const nvlinkDomainAttr = node.DRADriver + "/nvlinkDomain"

func draNvlinkScenario(t *T) {
	n := t.N
	createTemplate(t, "two-linked", claimRequest{class: node.DRADriver, count: 2, matchAttribute: nvlinkDomainAttr})
	defer deleteTemplate(t, "two-linked")
	var names []string
	var pods []*corev1.Pod
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("linked-%d", i)
		names = append(names, name)
		pods = append(pods, claimPod(name, "two-linked", ""))
	}
	d := createAndWaitRunning(t, pods...)
	t.Figure("6 pods of 2 linked GPUs: create -> all Running", d)
	defer deletePods(t, names...)

	islands := nvlinkIslands(t)
	uuids := sliceUUIDs(t)
	used := map[int]bool{}
	taken := map[string]string{}
	var allocs []allocation
	for _, name := range names {
		a := podClaim(t, name)
		allocs = append(allocs, a)
		if len(a.devices) != 2 {
			t.Errorf("%s: claim %s got %v, want 2 GPUs", name, a.claim, a.devices)
			continue
		}
		var idx []int
		var gpuUUIDs []string
		for _, dev := range a.devices {
			if other, ok := taken[dev]; ok {
				t.Errorf("%s and %s both got %s", other, name, dev)
			}
			taken[dev] = name
			gpuUUIDs = append(gpuUUIDs, uuids[dev])
			i := n.GPUIndex(uuids[dev])
			if i < 0 {
				t.Fatalf("%s: device %s (uuid %q) is no GPU of the machine", name, dev, uuids[dev])
			}
			idx = append(idx, i)
		}
		if islands[idx[0]] != islands[idx[1]] {
			t.Errorf("%s got GPUs %d and %d, of two NVLink islands (%d, %d)", name, idx[0], idx[1],
				islands[idx[0]], islands[idx[1]])
		}
		used[islands[idx[0]]] = true
		expectDraContainer(t, name, a, gpuUUIDs, nil)
	}
	if len(used) < 2 {
		t.Errorf("6 pairs used %d island(s), want both", len(used))
	}
	expectPrepared(t, allocs...)
	deletePods(t, names...)
	expectUnprepared(t, allocs...)
}

func draSharedScenario(t *T) {
	createClaim(t, "shared-gpu", claimRequest{class: node.DRADriver, count: 1})
	defer deleteClaim(t, "shared-gpu")
	createAndWaitRunning(t, claimPod("shared-a", "", "shared-gpu"), claimPod("shared-b", "", "shared-gpu"))
	defer deletePods(t, "shared-a", "shared-b")
	a := claimAllocation(t, "shared-gpu")
	if len(a.devices) != 1 {
		t.Fatalf("shared-gpu got %v, want one GPU", a.devices)
	}
	if b := podClaim(t, "shared-b"); b.uid != a.uid {
		t.Errorf("shared-b uses claim %s, want shared-gpu", b.claim)
	}
	uuid := sliceUUIDs(t)[a.devices[0]]
	expectDraContainer(t, "shared-a", a, []string{uuid}, nil)
	expectDraContainer(t, "shared-b", a, []string{uuid}, nil)
	expectPrepared(t, a)
	deletePods(t, "shared-a", "shared-b")
	expectUnprepared(t, a)
}

func draExtendedScenario(t *T) {
	createAndWaitRunning(t, gpuPod("ext-gpu", 1, "nvidia.com/gpu"))
	defer deletePods(t, "ext-gpu")
	a := podClaim(t, "ext-gpu")
	if len(a.devices) != 1 {
		t.Fatalf("ext-gpu's claim %s got %v, want one GPU", a.claim, a.devices)
	}
	expectDraContainer(t, "ext-gpu", a, []string{sliceUUIDs(t)[a.devices[0]]}, nil)
	expectPrepared(t, a)
	deletePods(t, "ext-gpu")
	expectUnprepared(t, a)
}

func draUnsatisfiableScenario(t *T) {
	createTemplate(t, "huge-gpu", claimRequest{class: node.DRADriver, count: 1,
		selector: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('100Gi')) >= 0"})
	defer deleteTemplate(t, "huge-gpu")
	if _, err := t.N.Client.CoreV1().Pods(ns).Create(t.Ctx, claimPod("huge-gpu", "huge-gpu", ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod huge-gpu: %v", err)
	}
	defer deletePods(t, "huge-gpu")
	msg := waitUnschedulable(t, "huge-gpu")
	if !strings.Contains(msg, "cannot allocate all claims") {
		t.Errorf("huge-gpu is unschedulable with %q, want the DRA plugin's \"cannot allocate all claims\"", msg)
	}
}

func draXidScenario(t *T) {
	n := t.N
	const bad = "gpu-5"
	before, err := n.SliceDevices(t.Ctx)
	if err != nil || len(before) != len(n.Machine.GPUs) {
		t.Fatalf("the slices hold %d devices (%v), want %d", len(before), err, len(n.Machine.GPUs))
	}
	if err := n.Sim("xid", "--gpu", "5", "--xid", "79"); err != nil {
		t.Fatalf("%v", err)
	}
	err = n.WaitFor(t.Ctx, bad+" to leave the ResourceSlices", 60*time.Second, func(ctx context.Context) (bool, error) {
		got, err := n.SliceDevices(ctx)
		if err != nil {
			return false, nil
		}
		_, there := got[bad]
		return !there && len(got) == len(n.Machine.GPUs)-1, nil
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	// The scheduler's copy of the slices, not only the API server's,
	// must be without gpu-5 before the claims below.
	start := time.Now()
	if err := n.WaitSchedulerSlices(t.Ctx); err != nil {
		t.Fatalf("%v", err)
	}
	t.Figure("scheduler barrier: probe slice created -> its claim allocated -> probe objects gone", time.Since(start))
	// A claim for that very GPU waits.
	createTemplate(t, "gpu-five", claimRequest{class: node.DRADriver, count: 1,
		selector: "device.attributes['gpu.nvidia.com'].index == 5"})
	defer deleteTemplate(t, "gpu-five")
	if _, err := n.Client.CoreV1().Pods(ns).Create(t.Ctx, claimPod("gpu-five", "gpu-five", ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod gpu-five: %v", err)
	}
	defer deletePods(t, "gpu-five")
	if msg := waitUnschedulable(t, "gpu-five"); !strings.Contains(msg, "cannot allocate all claims") {
		t.Errorf("gpu-five is unschedulable with %q, want the DRA plugin's \"cannot allocate all claims\"", msg)
	}
	createTemplate(t, "every-gpu", claimRequest{class: node.DRADriver})
	defer deleteTemplate(t, "every-gpu")
	createAndWaitRunning(t, claimPod("every-gpu", "every-gpu", ""))
	defer deletePods(t, "every-gpu")
	a := podClaim(t, "every-gpu")
	sort.Strings(a.devices)
	if len(a.devices) != len(n.Machine.GPUs)-1 {
		t.Errorf("a claim for all GPUs got %d: %v, want %d", len(a.devices), a.devices, len(n.Machine.GPUs)-1)
	}
	for _, d := range a.devices {
		if d == bad {
			t.Errorf("a claim for all GPUs got %s after its Xid 79", bad)
		}
	}
	uuids := sliceUUIDs(t)
	var gpuUUIDs []string
	for _, d := range a.devices {
		gpuUUIDs = append(gpuUUIDs, uuids[d])
	}
	expectDraContainer(t, "every-gpu", a, gpuUUIDs, nil)
}
