package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

// memAnnot is the node agent's gpulet.dev/gpu-memory annotation.
type memAnnot struct {
	UnitMiB int `json:"unitMiB"`
	GPUs    []struct {
		UUID  string `json:"uuid"`
		Units int    `json:"units"`
		Used  int    `json:"used"`
	} `json:"gpus"`
}

// pendingAnnot is the extender's gpulet.dev/gpu-memory-pending annotation.
type pendingAnnot struct {
	Pods []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"pods"`
}

func parseMemAnnotation(text string) (*memAnnot, error) {
	var m memAnnot
	if text == "" {
		return nil, fmt.Errorf("no %s annotation", memAnnotation)
	}
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, fmt.Errorf("%s: %w", memAnnotation, err)
	}
	return &m, nil
}

// memState is one look at the node: the scenario's pods, what the
// kubelet's device manager gave each of their containers (its checkpoint:
// the real allocation) and the Node's annotations.
type memState struct {
	pods    []corev1.Pod
	units   map[string]map[string][]string // pod UID -> container -> unit IDs
	mem     *memAnnot
	pending pendingAnnot
}

func readMemState(ctx context.Context, n *node.Node) (*memState, error) {
	pods, err := n.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: memPodLabel})
	if err != nil {
		return nil, err
	}
	s := &memState{pods: pods.Items, units: map[string]map[string][]string{}}
	b, err := os.ReadFile(filepath.Join("/var/lib/kubelet/device-plugins", "kubelet_internal_checkpoint"))
	if err != nil {
		return nil, err
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("kubelet checkpoint: %w", err)
	}
	for _, e := range cp.Data.PodDeviceEntries {
		if e.ResourceName != memResource {
			continue
		}
		if s.units[e.PodUID] == nil {
			s.units[e.PodUID] = map[string][]string{}
		}
		for _, ids := range e.DeviceIDs {
			s.units[e.PodUID][e.ContainerName] = append(s.units[e.PodUID][e.ContainerName], ids...)
		}
	}
	_, a, err := n.NodeMeta(ctx)
	if err != nil {
		return nil, err
	}
	if s.mem, err = parseMemAnnotation(a[memAnnotation]); err != nil {
		return nil, err
	}
	if text := a[pendingAnnotation]; text != "" {
		if err := json.Unmarshal([]byte(text), &s.pending); err != nil {
			return nil, fmt.Errorf("%s: %w", pendingAnnotation, err)
		}
	}
	return s, nil
}

func running(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) == len(p.Spec.Containers)
}

func podUnits(p *corev1.Pod) []int {
	var out []int
	for _, c := range p.Spec.Containers {
		q := c.Resources.Limits[memResource]
		out = append(out, int(q.Value()))
	}
	return out
}

// used checks the allocation of the running pods and returns the units in
// use per GPU. Violations of what must never happen: a container without
// its units, units of two GPUs or of an unknown GPU, a unit given twice, a
// GPU holding more than it has.
func (s *memState) used(gpus map[string]int) (map[string]int, []string) {
	var bad []string
	used := map[string]int{}
	owner := map[string]string{}
	for i := range s.pods {
		p := &s.pods[i]
		if !running(p) {
			continue
		}
		for j, c := range p.Spec.Containers {
			ids := s.units[string(p.UID)][c.Name]
			want := podUnits(p)[j]
			gpu := ""
			for _, id := range ids {
				g, _, _ := strings.Cut(id, "::m")
				if gpu != "" && g != gpu {
					bad = append(bad, fmt.Sprintf("%s/%s holds units of two GPUs: %v", p.Name, c.Name, ids))
					break
				}
				gpu = g
				if prev, dup := owner[id]; dup {
					bad = append(bad, fmt.Sprintf("unit %s is held by %s and %s/%s", id, prev, p.Name, c.Name))
				}
				owner[id] = p.Name + "/" + c.Name
			}
			if len(ids) != want {
				bad = append(bad, fmt.Sprintf("%s/%s runs with %d unit(s), asked for %d", p.Name, c.Name, len(ids), want))
			}
			if _, ok := gpus[gpu]; !ok && len(ids) > 0 {
				bad = append(bad, fmt.Sprintf("%s/%s holds units of unknown GPU %q", p.Name, c.Name, gpu))
			}
			used[gpu] += len(ids)
		}
	}
	for g, u := range used {
		if u > gpus[g] {
			bad = append(bad, fmt.Sprintf("GPU %s: %d GiB in use by running pods, it has %d", g, u, gpus[g]))
		}
	}
	for _, g := range s.mem.GPUs {
		if g.Used > g.Units {
			bad = append(bad, fmt.Sprintf("annotation %s: GPU %s used %d of %d units", memAnnotation, g.UUID, g.Used, g.Units))
		}
	}
	sort.Strings(bad)
	return used, bad
}

// fits says whether containers of these sizes can each be placed whole on
// one GPU of free (at most a few containers: a plain search).
func fits(sizes []int, free map[string]int) bool {
	if len(sizes) == 0 {
		return true
	}
	for g, f := range free {
		if f >= sizes[0] {
			free[g] -= sizes[0]
			ok := fits(sizes[1:], free)
			free[g] += sizes[0]
			if ok {
				return true
			}
		}
	}
	return false
}

// Reasons the scheduler gives a memory pod it cannot place: the
// extender's, or its own count of the node's units.
var extenderReasons = []string{"no single GPU on node", "no GPU on node", "do not fit on single GPUs"}

const nodeCountReason = "Insufficient " + memResource

func unschedulableReason(p *corev1.Pod) (string, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message, true
		}
	}
	return "", false
}

func isExtenderReason(msg string) bool {
	for _, r := range extenderReasons {
		if strings.Contains(msg, r) {
			return true
		}
	}
	return false
}

// settled says whether the node has come to rest: every pod runs or waits
// unbound with a scheduler's reason and fits nowhere, no pod is being
// deleted, no pod is pending on the node, the annotation agrees with the
// kubelet. A pod that failed or cannot start is an error.
func (s *memState) settled(gpus map[string]int, used map[string]int) (string, error) {
	free := map[string]int{}
	for g, u := range gpus {
		free[g] = u - used[g]
	}
	for i := range s.pods {
		p := &s.pods[i]
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return "", fmt.Errorf("pod %s ended %s: %s: %s", p.Name, p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				return "", fmt.Errorf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
			}
		}
		switch {
		case p.DeletionTimestamp != nil:
			return p.Name + " is being deleted", nil
		case running(p):
		case p.Spec.NodeName != "":
			return p.Name + " is bound, not running yet", nil
		default:
			msg, ok := unschedulableReason(p)
			if !ok {
				return p.Name + " is not scheduled yet", nil
			}
			if !isExtenderReason(msg) && !strings.Contains(msg, nodeCountReason) {
				// Such as the node's not-ready taint while the kubelet restarts.
				return fmt.Sprintf("%s waits for a reason neither the extender's nor %q: %s", p.Name, nodeCountReason, msg), nil
			}
			if fits(podUnits(p), free) {
				return fmt.Sprintf("%s %v waits but fits the free memory %v", p.Name, podUnits(p), free), nil
			}
		}
	}
	if len(s.pending.Pods) > 0 {
		return fmt.Sprintf("%d pod(s) still pending on the node", len(s.pending.Pods)), nil
	}
	for _, g := range s.mem.GPUs {
		if g.Used != used[g.UUID] {
			return fmt.Sprintf("annotation says GPU %s uses %d, the kubelet %d", g.UUID, g.Used, used[g.UUID]), nil
		}
	}
	return "", nil
}

// memWatch checks the node while waiting: every look runs the checks of
// used, and a violation ends the scenario.
type memWatch struct {
	t        *T
	gpus     map[string]int
	envOK    map[string]bool // pod UIDs whose environment was checked
	ran      map[string]bool // pod names that ran
	extender int             // unschedulable pods seen with the extender's reason
	last     *memState
}

// waitSettled waits until the node is at rest (see settled), checking
// every look at it on the way, then checks the running pods' environment.
func (w *memWatch) waitSettled(what string) {
	t := w.t
	var why string
	err := t.N.WaitFor(t.Ctx, what, 180*time.Second, func(ctx context.Context) (bool, error) {
		s, err := readMemState(ctx, t.N)
		if err != nil {
			why = err.Error()
			return false, nil
		}
		used, v := s.used(w.gpus)
		if len(v) > 0 {
			return false, fmt.Errorf("a GPU without room: %s", strings.Join(v, "; "))
		}
		w.last = s
		why, err = s.settled(w.gpus, used)
		return err == nil && why == "", err
	})
	if err != nil {
		t.Fatalf("%v (last: %s)\n%s", err, why, t.N.Kubectl("get", "pods", "-n", ns, "-o", "wide"))
	}
	for i := range w.last.pods {
		p := &w.last.pods[i]
		if running(p) {
			w.ran[p.Name] = true
			w.checkEnv(p)
		} else if msg, _ := unschedulableReason(p); isExtenderReason(msg) {
			w.extender++
		}
	}
}

// checkEnv reads what a running pod printed: each container learns its
// limit and has the device node of the GPU its units belong to, and no
// other GPU's.
func (w *memWatch) checkEnv(p *corev1.Pod) {
	t := w.t
	if w.envOK[string(p.UID)] {
		return
	}
	minors := map[string]int{}
	for _, g := range t.N.Machine.GPUs {
		minors[g.UUID] = g.Minor
	}
	for j, c := range p.Spec.Containers {
		ids := w.last.units[string(p.UID)][c.Name]
		if len(ids) == 0 {
			continue
		}
		gpu, _, _ := strings.Cut(ids[0], "::m")
		var text string
		err := t.N.WaitFor(t.Ctx, "the report of "+p.Name+"/"+c.Name, 60*time.Second, func(ctx context.Context) (bool, error) {
			b, err := t.N.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name}).DoRaw(ctx)
			text = string(b)
			return err == nil && strings.Contains(text, "== end"), nil
		})
		if err != nil {
			t.Fatalf("%v", err)
		}
		devs, env, _ := strings.Cut(text, "== env")
		limit := envMap(strings.Split(env, "\n"))["GPULET_GPU_MEMORY_LIMIT"]
		if want := fmt.Sprint(podUnits(p)[j] * unitMiB); limit != want {
			t.Errorf("%s/%s: GPULET_GPU_MEMORY_LIMIT=%q, want %s", p.Name, c.Name, limit, want)
		}
		minor, ok := minors[gpu]
		if !ok {
			t.Errorf("%s/%s: units %v are of %s, not a GPU of the machine", p.Name, c.Name, ids, gpu)
			continue
		}
		want := map[string]bool{fmt.Sprintf("nvidia%d", minor): true}
		got := map[string]bool{}
		for name := range nvidiaDevs(strings.Split(devs, "\n")) {
			if _, control := controlNodes[name]; !control && name != "nvidia-caps" {
				got[name] = true
			}
		}
		expectSet(t, p.Name+"/"+c.Name+": GPU device nodes", got, want)
	}
	w.envOK[string(p.UID)] = true
}

// runningNames are the running pods of the last look.
func (w *memWatch) runningNames() []string {
	var out []string
	for i := range w.last.pods {
		if running(&w.last.pods[i]) {
			out = append(out, w.last.pods[i].Name)
		}
	}
	sort.Strings(out)
	return out
}
