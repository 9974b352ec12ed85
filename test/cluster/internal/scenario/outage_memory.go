package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

func init() {
	register(Scenario{
		Name: "api-outage-memory",
		Doc: "GPU-memory shares through the extender while kube-apiserver is stopped (SIGSTOP), killed and " +
			"restarted, and cut off by iptables, with pods of 1-8 GiB created and deleted all along: no kubelet " +
			"Allocate past gpulet's deadline, admissions fail only in an outage, every pod wanted runs once the " +
			"API server is back, allocatable unchanged, no unit booked twice, the extender's and the node agent's " +
			"watches resume (--outage-long: 1 s to 2 min each)",
		Machine: "mixed-memory",
		Run:     apiOutageMemoryScenario,
	})
}

// The kubelet's device manager sends Allocate without grpc-timeout: gpulet
// applies h2's default of 10 s (docs/plugin.md).
const memoryCallDeadline = 10

var memoryFailedCall = regexp.MustCompile(`] (Allocate|GetPreferredAllocation) failed: `)

func apiOutageMemoryScenario(t *T) {
	start := time.Now()
	m, undo := setUpMemoryShares(t)
	defer undo()
	defer deleteAllMemPods(t)
	defer deleteOutagePods(t)
	t.Figure("api-outage-memory: set-up (RBAC, gpulet, extender, scheduler)", time.Since(start))
	rng := seed(t, "api-outage-memory")
	sizes := map[string]int{}
	newPod := func(name string) *corev1.Pod {
		if sizes[name] == 0 {
			sizes[name] = 1 + rng.Intn(8)
		}
		return memPod(name, []int{sizes[name]}, memResource)
	}
	check := func(ctx context.Context) []string {
		s, err := readMemState(ctx, t.N)
		if err != nil {
			return nil // the API server is away, or a file being written
		}
		_, bad := s.used(m.units)
		return bad
	}
	c := startChurn(t.Ctx, t.N, 4, newPod, check)
	defer c.stop()
	mo := &memOutage{m: m, c: c}
	runOutages(t, &outageTarget{
		name:     "api-outage-memory",
		churn:    c,
		callName: "Allocate",
		calls: func(text string) histo {
			return readHisto(text, "kubelet_device_plugin_alloc_duration_seconds", func(l map[string]string) bool {
				return l["resource_name"] == memResource
			})
		},
		deadline:   memoryCallDeadline,
		failedCall: memoryFailedCall,
		margin:     (memoryCallDeadline + 10) * time.Second,
		failureOK: func(reason string) bool {
			// The kubelet fails the admission on gpulet's error
			// (docs/sharing.md); only at an outage (checkGpuletLog).
			return strings.Contains(reason, "UnexpectedAdmissionError")
		},
		before: mo.before,
		after:  mo.after,
	})
	c.stop()
	deleteOutagePods(t)
	c.waitGone(t)
	checkMemAtRest(t)
	t.Figure("api-outage-memory: total", time.Since(start))
}

type memOutage struct {
	m      *memShares
	c      *churn
	gpulet *gpulet
	probes int
}

func (mo *memOutage) before(t *T) {
	mo.gpulet = currentGpulet(t, memResource)
}

func (mo *memOutage) after(t *T, label string) {
	n := t.N
	// ListAndWatch went on: the same process, never registered again, and
	// the node advertises every unit.
	mo.gpulet.expectSame(t)
	if err := n.WaitAllocatable(t.Ctx, memResource, mo.m.total); err != nil {
		t.Errorf("%s: %v", label, err)
	}
	extenderSeesNewNode(t, label, mo.m.ext)
	mo.c.pause()
	mo.c.waitGone(t)
	mo.probes++
	nodeAgentSeesPodGone(t, label, fmt.Sprintf("outage-probe-%d", mo.probes))
	mo.c.resume()
}

// memAnnotEntries is what the node agent's gpulet.dev/gpu-memory says
// beside the GPUs: the pods it attributed units to, and the Allocate
// answers no PodResources listing showed under a pod yet (placements).
type memAnnotEntries struct {
	GPUs []struct {
		UUID string `json:"uuid"`
		Used int    `json:"used"`
	} `json:"gpus"`
	Pods []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"pods"`
	Placements []struct {
		GPU   string `json:"gpu"`
		Units int    `json:"units"`
	} `json:"placements"`
}

func readMemEntries(ctx context.Context, n *node.Node) (*memAnnotEntries, error) {
	_, a, err := n.NodeMeta(ctx)
	if err != nil {
		return nil, err
	}
	var e memAnnotEntries
	if err := json.Unmarshal([]byte(a[memAnnotation]), &e); err != nil {
		return nil, fmt.Errorf("%s: %w", memAnnotation, err)
	}
	return &e, nil
}

func (e *memAnnotEntries) lists(name string) bool {
	for _, p := range e.Pods {
		if p.Namespace == ns && p.Name == name {
			return true
		}
	}
	return false
}

// nodeAgentSeesPodGone checks that the node agent's pod watch resumed: a
// pod created alone runs and the annotation attributes its units to it;
// then it is deleted, and with no Allocate since to wake the node agent,
// only its pod watch makes it sync: the annotation must drop the pod well
// before the 5-minute resync.
func nodeAgentSeesPodGone(t *T, label, name string) {
	n := t.N
	createPods(t, []*corev1.Pod{memPod(name, []int{1}, memResource)})
	waitPodRunning(t, name)
	annotated := func(want bool) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			e, err := readMemEntries(ctx, n)
			return err == nil && e.lists(name) == want, nil
		}
	}
	if err := n.WaitFor(t.Ctx, "the node agent's annotation to list pod "+name, 2*time.Minute, annotated(true)); err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	asked := time.Now()
	deleteMemPods(t, []string{name})
	if err := n.WaitFor(t.Ctx, "the node agent's annotation to let deleted pod "+name+" go", 3*time.Minute, annotated(false)); err != nil {
		t.Errorf("%s: %v: the node agent's pod watch did not resume", label, err)
		return
	}
	t.Figure(label+": pod deleted -> node agent's annotation lets it go", time.Since(asked))
}

// checkMemAtRest, with no pod of the scenario left: the annotation lists
// none of them, nothing is pending, no placement is left and no GPU has
// units used. An Allocate answer of a pod deleted before any listing
// showed it leaves at the first listing after the pod is gone
// (docs/sharing.md), so the wait is well short of pendingTimeout (5 min),
// after which it would leave anyway.
func checkMemAtRest(t *T) {
	var why string
	start := time.Now()
	err := t.N.WaitFor(t.Ctx, "the node agent's annotations at rest", 2*time.Minute, func(ctx context.Context) (bool, error) {
		e, err := readMemEntries(ctx, t.N)
		if err != nil {
			why = err.Error()
			return false, nil
		}
		s, err := readMemState(ctx, t.N)
		if err != nil {
			why = err.Error()
			return false, nil
		}
		if len(s.pending.Pods) > 0 {
			why = fmt.Sprintf("%d pod(s) pending", len(s.pending.Pods))
			return false, nil
		}
		if len(e.Pods) > 0 {
			why = fmt.Sprintf("the annotation lists pod %s/%s", e.Pods[0].Namespace, e.Pods[0].Name)
			return false, nil
		}
		if len(e.Placements) > 0 {
			why = fmt.Sprintf("%d placement(s) left, the first %d unit(s) of %s", len(e.Placements), e.Placements[0].Units, e.Placements[0].GPU)
			return false, nil
		}
		for _, g := range e.GPUs {
			if g.Used != 0 {
				why = fmt.Sprintf("GPU %s: used %d, no pod", g.UUID, g.Used)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("%v (last: %s)", err, why)
		return
	}
	t.Figure("api-outage-memory: last pod gone -> annotation at rest", time.Since(start))
}

// extenderSeesNewNode creates a Node with no kubelet and waits until the
// extender's node cache holds it (gpulet_extender_nodes), then deletes it
// and waits until the cache lets it go: the extender's Node watch resumed.
func extenderSeesNewNode(t *T, label string, ext *node.Extender) {
	n := t.N
	const probe = "gpulet-outage-probe"
	count := func(ctx context.Context) (int, error) {
		text, err := ext.Metrics(ctx)
		if err != nil {
			return 0, err
		}
		s := promSamples(text, "gpulet_extender_nodes")
		if len(s) != 1 {
			return 0, fmt.Errorf("no gpulet_extender_nodes in the extender's metrics")
		}
		return int(s[0].value), nil
	}
	before, err := count(t.Ctx)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: probe, Labels: map[string]string{outageLabel: "1"}},
		Spec: corev1.NodeSpec{Unschedulable: true}}
	if _, err := n.Client.CoreV1().Nodes().Create(t.Ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s: create Node %s: %v", label, probe, err)
	}
	created := time.Now()
	defer func() {
		if err := n.Client.CoreV1().Nodes().Delete(t.Ctx, probe, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete Node %s: %v", probe, err)
		}
	}()
	wait := func(what string, want int) {
		err := n.WaitFor(t.Ctx, what, outageRunLimit, func(ctx context.Context) (bool, error) {
			got, err := count(ctx)
			return err == nil && got == want, nil
		})
		if err != nil {
			t.Errorf("%s: %v: the extender's Node watch did not resume", label, err)
		}
	}
	wait("the extender's node cache to hold Node "+probe, before+1)
	t.Figure(label+": Node created -> in the extender's cache", time.Since(created))
	if err := n.Client.CoreV1().Nodes().Delete(t.Ctx, probe, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("%s: delete Node %s: %v", label, probe, err)
	}
	wait("the extender's node cache to let Node "+probe+" go", before)
}
