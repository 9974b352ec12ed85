package scenario

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func init() {
	register(Scenario{
		Name: "memory-shares",
		Doc: "GPU-memory shares through `gpulet extender` on GPUs of 80 and 40 GB: 50 pods of 1-40 GiB " +
			"(some with two containers) created in random bursts; every bound pod runs, no GPU ever holds " +
			"more than it has, pods that fit nowhere wait with the scheduler's reason, deleted pods make room " +
			"for waiting ones until all 50 ran; the kubelet restarts in the middle, then the extender",
		Machine: "mixed-memory",
		Run:     memorySharesScenario,
	})
}

const memPods = 50

func memorySharesScenario(t *T) {
	start := time.Now()
	m, undo := setUpMemoryShares(t)
	defer undo()
	defer deleteAllMemPods(t)
	t.Figure("memory-shares: set-up (RBAC, gpulet, extender, scheduler)", time.Since(start))
	rng := seed(t, "memory-shares")
	w := &memWatch{t: t, gpus: m.units, envOK: map[string]bool{}, ran: map[string]bool{}}

	// Bigger than any GPU: the extender says so, and it never runs.
	largest := 0
	for _, u := range m.units {
		largest = max(largest, u)
	}
	tooBig := memPod("mem-too-big", []int{largest + 1}, memResource)
	createPods(t, []*corev1.Pod{tooBig})
	wantReason := fmt.Sprintf("no GPU on node gpulet-node has %d GiB (largest: %d GiB)", largest+1, largest)
	expectReason(t, tooBig.Name, wantReason)

	sizes := randomPods(rng, memPods)
	names := make([]string, 0, len(sizes))
	for name := range sizes {
		names = append(names, name)
	}
	sort.Strings(names)
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	phase := time.Now()
	for i := 0; i < len(names); {
		k := min(1+rng.Intn(8), len(names)-i)
		var burst []*corev1.Pod
		for _, name := range names[i : i+k] {
			burst = append(burst, memPod(name, sizes[name], memResource))
		}
		createPods(t, burst)
		waitConsidered(t, names[i:i+k])
		i += k
	}
	w.waitSettled("the 50 pods to run or wait")
	t.Figure("memory-shares: 50 pods created in bursts -> at rest", time.Since(phase))
	t.FigureText("memory-shares: running after the bursts", fmt.Sprint(len(w.runningNames())))

	// The kubelet restarts while pods are deleted: they finish when it is
	// back, and waiting pods take their memory from the new kubelet.
	phase = time.Now()
	victims := pick(rng, w.runningNames(), 3)
	t.N.StopKubelet()
	for _, name := range victims {
		if err := t.N.Client.CoreV1().Pods(ns).Delete(t.Ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete pod %s: %v", name, err)
		}
	}
	if err := t.N.StartKubelet(); err != nil {
		t.Fatalf("restart the kubelet: %v", err)
	}
	waitMemPodsGone(t, victims)
	w.waitSettled("the pods after the kubelet's restart")
	t.Figure("memory-shares: kubelet restart, deletes -> at rest", time.Since(phase))

	// The extender is down while pods are deleted, so the scheduler can
	// place nothing in the memory freed (it must not without the
	// extender); a new extender process, its view rebuilt from the API
	// server, places the waiting pods there.
	phase = time.Now()
	victims = pick(rng, w.runningNames(), 3)
	m.ext.Stop()
	bound := boundMemPods(t)
	for _, name := range victims {
		if err := t.N.Client.CoreV1().Pods(ns).Delete(t.Ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete pod %s: %v", name, err)
		}
	}
	waitMemPodsGone(t, victims)
	for name := range boundMemPods(t) {
		if !bound[name] {
			t.Errorf("pod %s was bound while the extender was down", name)
		}
	}
	if err := m.ext.Start(t.Ctx); err != nil {
		t.Fatalf("restart the extender: %v", err)
	}
	w.waitSettled("the pods after the extender's restart")
	t.Figure("memory-shares: extender restart, deletes -> at rest", time.Since(phase))

	// Deleting the running pods makes room for the waiting ones, until
	// every pod ran.
	phase = time.Now()
	rounds := 0
	for len(w.ran) < memPods {
		rounds++
		before := len(w.ran)
		deleteMemPods(t, w.runningNames())
		w.waitSettled(fmt.Sprintf("round %d: the waiting pods to take the freed memory", rounds))
		if len(w.ran) == before {
			t.Fatalf("round %d: every running pod was deleted, yet no waiting pod started", rounds)
		}
	}
	t.Figure(fmt.Sprintf("memory-shares: %d rounds of deletes until all ran", rounds), time.Since(phase))
	t.FigureText("memory-shares: waiting pods seen with the extender's reason", fmt.Sprint(w.extender))

	deleteMemPods(t, w.runningNames())
	w.waitSettled("the node empty but for the pod bigger than any GPU")
	expectReason(t, tooBig.Name, wantReason)
	fragmented(t, w, m)
	deleteMemPods(t, w.runningNames())
	w.waitSettled("the node empty again")
	for _, g := range w.last.mem.GPUs {
		if g.Used != 0 {
			t.Errorf("GPU %s: %d units used with no pod running", g.UUID, g.Used)
		}
	}
	t.Figure("memory-shares: total", time.Since(start))
}

// fragmented fills the 80 GB GPUs and leaves 10 GiB free on each 40 GB
// one: a pod of 20 GiB fits the node's count of units but no single GPU,
// and waits with the extender's reason until a pod on a 40 GB GPU is
// deleted; then it runs there.
func fragmented(t *T, w *memWatch, m *memShares) {
	phase := time.Now()
	var big, small []*corev1.Pod
	for _, g := range t.N.Machine.GPUs {
		u := m.units[g.UUID]
		if u > 40 {
			big = append(big, memPod(fmt.Sprintf("frag-big-%d", g.Index), []int{u}, memResource))
		} else {
			small = append(small, memPod(fmt.Sprintf("frag-small-%d", g.Index), []int{u - 10}, memResource))
		}
	}
	// The big ones first: binpack would put a small one on an empty 80 GB
	// GPU (the first in order) if it came first.
	for _, batch := range [][]*corev1.Pod{big, small} {
		createPods(t, batch)
		w.waitSettled("the fragmenting pods to run")
	}
	wait := memPod("frag-waits", []int{20}, memResource)
	createPods(t, []*corev1.Pod{wait})
	expectReason(t, wait.Name, "no single GPU on node gpulet-node has 20 GiB free (largest free: 10 GiB on GPU-")
	w.extender++
	deleteMemPods(t, []string{small[0].Name})
	w.waitSettled("the 20 GiB pod to take the freed GPU")
	if !w.ran[wait.Name] {
		t.Errorf("%s does not run after %s was deleted", wait.Name, small[0].Name)
	}
	t.Figure("memory-shares: fragmented GPUs, a delete makes room", time.Since(phase))
}

// waitConsidered waits until the scheduler has decided on each pod once:
// bound, or unschedulable with a reason.
func waitConsidered(t *T, names []string) {
	err := t.N.WaitFor(t.Ctx, fmt.Sprintf("the scheduler to consider %v", names), 120*time.Second, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			p, err := t.N.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if _, ok := unschedulableReason(p); p.Spec.NodeName == "" && !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
}

// expectReason waits until an unbound pod's PodScheduled condition gives
// the extender's reason.
func expectReason(t *T, name, want string) {
	var last string
	err := t.N.WaitFor(t.Ctx, "pod "+name+" to wait with the extender's reason", 120*time.Second, func(ctx context.Context) (bool, error) {
		p, err := t.N.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s was bound to %s", name, p.Spec.NodeName)
		}
		last, _ = unschedulableReason(p)
		return strings.Contains(last, want), nil
	})
	if err != nil {
		t.Fatalf("%v (last reason: %q)", err, last)
	}
}

// boundMemPods are the names of the memory pods bound to a node.
func boundMemPods(t *T) map[string]bool {
	pods, err := t.N.Client.CoreV1().Pods(ns).List(t.Ctx, metav1.ListOptions{LabelSelector: memPodLabel})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			out[p.Name] = true
		}
	}
	return out
}

// pick returns one in every `every` of names, at random.
func pick(rng *rand.Rand, names []string, every int) []string {
	var out []string
	for _, n := range names {
		if rng.Intn(every) == 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 && len(names) > 0 {
		out = append(out, names[rng.Intn(len(names))])
	}
	return out
}
