package scenario

// Configuration reloads as an operator does them (docs/configuration.md,
// "Reloading"): edit the ConfigMap, wait until the kubelet has synced it
// into gpulet's container, send SIGHUP to gpulet's process. What must hold
// is what the daemon's integration tests (test/integration/
// daemon_reload_test.cc) check against a fake kubelet, here seen where
// users see it: the node's allocatable in the API server, the kubelet's
// registrations, the pod's restart count.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"gpulet.dev/test/cluster/internal/node"
)

func init() {
	register(Scenario{
		Name: "reload-unchanged",
		Doc: "SIGHUP with the same file: gpulet does not register again and the node's allocatable " +
			"never drops (every node status update is watched through the reload)",
		Run: reloadUnchangedScenario,
	})
	register(Scenario{
		Name: "reload-lost-gpu",
		Doc: "a GPU falls off the bus (sim lose), then SIGHUP: gpulet keeps serving the other 7 without " +
			"registering again; sim restore brings allocatable back to 8",
		Run: reloadLostGPUScenario,
	})
	register(Scenario{
		Name: "reload-rejected",
		Doc: "after an Xid 79, an invalid file (replicas: 1) and SIGHUP: the reload is refused, nothing " +
			"registers again, allocatable stays lowered, the container is not restarted, a later Xid is acted on",
		Run: reloadRejectedScenario,
	})
	register(Scenario{
		Name: "reload-replicas",
		Doc: "time-slicing 4 ways (32), Xid 79 on GPU 6 (28), the file changed to 2 replicas and SIGHUP: " +
			"14, not 16, and by ID GPU 6's replicas the ones out (health survives the reload)",
		Run: reloadReplicasScenario,
	})
	register(Scenario{
		Name: "reload-xid",
		Doc: "three rounds of SIGHUP followed at once by an Xid 79 on another GPU: every Xid lowers " +
			"allocatable, the simulator routed every event",
		Run: reloadXidScenario,
	})
}

// timeSlicingConfig shares every GPU `replicas` ways.
func timeSlicingConfig(replicas int) string {
	return fmt.Sprintf(`version: v1
flags:
  migStrategy: none
  failOnInitError: true
  plugin:
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: %d
`, replicas)
}

// lostGPUConfig recovers a GPU as soon as it answers NVML again.
const lostGPUConfig = `version: v1
flags:
  migStrategy: none
  failOnInitError: true
  plugin:
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
health:
  quietPeriod: 0s
`

// gpulet is the running gpulet pod and process a reload scenario works on.
type gpulet struct {
	pod      *corev1.Pod
	pid      int
	regs     map[string]int // registrations per resource at the start
	restarts int32
}

// currentGpulet finds gpulet's pod and process and counts its registrations
// of the resources.
func currentGpulet(t *T, resources ...string) *gpulet {
	n := t.N
	pod, err := n.GpuletPod(t.Ctx)
	if err != nil || pod == nil {
		t.Fatalf("no gpulet pod: %v", err)
	}
	g := &gpulet{pod: pod, regs: map[string]int{}}
	if len(pod.Status.ContainerStatuses) == 1 {
		g.restarts = pod.Status.ContainerStatuses[0].RestartCount
	}
	if g.pid, err = n.GpuletPid(pod); err != nil {
		t.Fatalf("%v", err)
	}
	for _, r := range resources {
		if g.regs[r], err = n.Registrations(t.Ctx, pod.Name, r); err != nil {
			t.Fatalf("%v", err)
		}
	}
	return g
}

// expectSame checks that gpulet's pod, container and process are the ones
// of g and that no resource registered again.
func (g *gpulet) expectSame(t *T) {
	n := t.N
	pod, err := n.GpuletPod(t.Ctx)
	if err != nil || pod == nil {
		t.Fatalf("no gpulet pod: %v", err)
	}
	if pod.UID != g.pod.UID {
		t.Errorf("gpulet's pod was replaced (%s -> %s)", g.pod.Name, pod.Name)
		return
	}
	if len(pod.Status.ContainerStatuses) != 1 {
		t.Errorf("gpulet's pod has %d container statuses", len(pod.Status.ContainerStatuses))
	} else if cs := pod.Status.ContainerStatuses[0]; cs.RestartCount != g.restarts || cs.State.Running == nil {
		last := ""
		if term := cs.LastTerminationState.Terminated; term != nil {
			last = fmt.Sprintf("; it last ended with exit code %d (%s)", term.ExitCode, term.Reason)
		}
		t.Errorf("gpulet's container restarted %d times, running: %v, want %d restarts and running%s",
			cs.RestartCount, cs.State.Running != nil, g.restarts, last)
	}
	if pid, err := n.GpuletPid(pod); err != nil || pid != g.pid {
		t.Errorf("gpulet's process is %d (%v), want %d still running", pid, err, g.pid)
	}
	for r, want := range g.regs {
		if got, err := n.Registrations(t.Ctx, pod.Name, r); err != nil || got != want {
			t.Errorf("gpulet registered %s %d times in all (%v), want %d (none for the reload)", r, got, err, want)
		}
	}
}

// reload puts config into the ConfigMap (config == "" keeps the file as it
// is), waits for it in gpulet's container, sends SIGHUP and waits for the
// log line that ends the reload (node.ReloadAccepted or node.ReloadRejected).
// It returns when the signal was sent.
func (g *gpulet) reload(t *T, config, outcome string) time.Time {
	n := t.N
	if config != "" {
		start := time.Now()
		if _, err := n.SetConfig(t.Ctx, g.pid, config); err != nil {
			t.Fatalf("%v", err)
		}
		t.Figure("ConfigMap edited -> new file in gpulet's container", time.Since(start))
	}
	before, err := n.CountInLog(t.Ctx, g.pod.Name, outcome)
	if err != nil {
		t.Fatalf("%v", err)
	}
	sent := time.Now()
	if err := n.Sighup(g.pid); err != nil {
		t.Fatalf("SIGHUP to gpulet (%d): %v", g.pid, err)
	}
	if err := n.WaitInLog(t.Ctx, g.pod.Name, outcome, before+1); err != nil {
		t.Fatalf("after SIGHUP: %v\n%s", err, n.Kubectl("-n", "kube-system", "logs", g.pod.Name, "--tail=20"))
	}
	return sent
}

// reconfigure restarts gpulet with config (a fresh process, so a fresh
// simulator too) and, at the end of the scenario, with the no-sharing
// config again.
func reconfigure(t *T, config string, want map[string]int) {
	if err := t.N.Reconfigure(t.Ctx, config, want); err != nil {
		t.Fatalf("%v", err)
	}
}

func restoreNoSharing(t *T) {
	if err := t.N.Reconfigure(t.Ctx, node.NoSharingConfig, map[string]int{"nvidia.com/gpu": len(t.N.Machine.GPUs)}); err != nil {
		t.Errorf("restoring the config: %v", err)
	}
}

// expectAllocatable waits until the node's allocatable count of resource
// is want, or ends the scenario saying what it is. That a count also stays
// is checked with watchAllocatable.
// expectAllocatableIDs reports an error unless the kubelet's allocatable
// nvidia.com/gpu devices become exactly want.
func expectAllocatableIDs(t *T, when string, want []string) {
	if err := waitAllocatableIDs(t, "nvidia.com/gpu", want); err != nil {
		t.Errorf("%s: %v", when, err)
	}
}

func expectAllocatable(t *T, resource string, want int) {
	if err := t.N.WaitAllocatable(t.Ctx, resource, want); err != nil {
		got, _ := t.N.Allocatable(t.Ctx, resource)
		t.Fatalf("%v (it is %d)", err, got)
	}
}

// allocatableWatch records, through a watch on the Node, every allocatable
// count of a resource the kubelet reported and every status heartbeat.
type allocatableWatch struct {
	resource string
	mu       sync.Mutex
	min, max int64
	seen     map[int64]bool
	beats    []time.Time
	err      error
	cancel   context.CancelFunc
	done     chan struct{}
}

func watchAllocatable(t *T, resource string) *allocatableWatch {
	n := t.N
	node0, err := n.Client.CoreV1().Nodes().Get(t.Ctx, node.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	q := node0.Status.Allocatable[corev1.ResourceName(resource)]
	ctx, cancel := context.WithCancel(t.Ctx)
	w := &allocatableWatch{resource: resource, min: q.Value(), max: q.Value(), seen: map[int64]bool{q.Value(): true},
		cancel: cancel, done: make(chan struct{})}
	watcher, err := n.Client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", node.NodeName).String(),
		ResourceVersion: node0.ResourceVersion,
	})
	if err != nil {
		cancel()
		t.Fatalf("watch the node: %v", err)
	}
	go func() {
		defer close(w.done)
		defer watcher.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-watcher.ResultChan():
				if !ok {
					w.mu.Lock()
					if ctx.Err() == nil {
						w.err = fmt.Errorf("the node watch ended early")
					}
					w.mu.Unlock()
					return
				}
				nd, isNode := ev.Object.(*corev1.Node)
				if ev.Type != watch.Modified || !isNode {
					continue
				}
				v := nd.Status.Allocatable[corev1.ResourceName(resource)]
				w.mu.Lock()
				w.min = min(w.min, v.Value())
				w.max = max(w.max, v.Value())
				w.seen[v.Value()] = true
				for _, c := range nd.Status.Conditions {
					if c.Type == corev1.NodeReady {
						w.beats = append(w.beats, c.LastHeartbeatTime.Time)
					}
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// waitStatusUpdates waits until the kubelet has sent two node status
// updates whose heartbeats are later than the one in force now: the second
// was computed after the first was written, so after this call began, and
// any device change gpulet made before it is in it.
func (w *allocatableWatch) waitStatusUpdates(t *T) {
	n := t.N
	nd, err := n.Client.CoreV1().Nodes().Get(t.Ctx, node.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	var now time.Time
	for _, c := range nd.Status.Conditions {
		if c.Type == corev1.NodeReady {
			now = c.LastHeartbeatTime.Time
		}
	}
	err = n.WaitFor(t.Ctx, "two node status updates", 30*time.Second, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err != nil {
			return false, w.err
		}
		later := map[time.Time]bool{}
		for _, b := range w.beats {
			if b.After(now) {
				later[b] = true
			}
		}
		return len(later) >= 2, nil
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
}

// stop ends the watch and returns the lowest and highest count seen.
func (w *allocatableWatch) stop() (int64, int64) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.min, w.max
}

// others returns, after stop, the counts seen that are none of want, in
// order.
func (w *allocatableWatch) others(want ...int64) []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int64
	for v := range w.seen {
		if !slices.Contains(want, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func reloadUnchangedScenario(t *T) {
	n := t.N
	gpus := len(n.Machine.GPUs)
	g := currentGpulet(t, "nvidia.com/gpu")
	expectAllocatable(t, "nvidia.com/gpu", gpus)
	w := watchAllocatable(t, "nvidia.com/gpu")
	sent := g.reload(t, "", node.ReloadAccepted)
	t.Figure("SIGHUP -> reload done (unchanged file)", time.Since(sent))
	w.waitStatusUpdates(t)
	lo, hi := w.stop()
	if lo != int64(gpus) || hi != int64(gpus) {
		t.Errorf("allocatable nvidia.com/gpu went through %d..%d during the reload, want %d throughout", lo, hi, gpus)
	}
	g.expectSame(t)
}

func reloadLostGPUScenario(t *T) {
	n := t.N
	uuids := profileGPUs(t)
	gpus := len(uuids)
	full := map[string]int{"nvidia.com/gpu": gpus}
	reconfigure(t, lostGPUConfig, full)
	defer restoreNoSharing(t)
	g := currentGpulet(t, "nvidia.com/gpu")
	if err := n.Sim("lose", "--gpu", "2"); err != nil {
		t.Fatalf("%v", err)
	}
	// Only a probe that saw the GPU lost lowers allocatable; so from here
	// on gpulet knows, and a restore is a recovery it must see.
	expectAllocatable(t, "nvidia.com/gpu", gpus-1)
	// Watched from before the SIGHUP: not even for one status update may the
	// reload advertise the lost GPU, nor drop the others.
	w := watchAllocatable(t, "nvidia.com/gpu")
	g.reload(t, "", node.ReloadAccepted)
	w.waitStatusUpdates(t)
	lo, hi := w.stop()
	if lo != int64(gpus-1) || hi != int64(gpus-1) {
		t.Errorf("allocatable nvidia.com/gpu was %d..%d during and after the reload, want %d (the lost GPU Unhealthy, the others served)",
			lo, hi, gpus-1)
	}
	expectAllocatableIDs(t, "after the reload with GPU 2 lost", except(uuids, uuids[2]))
	g.expectSame(t)
	if c, _ := n.CountInLog(t.Ctx, g.pod.Name, "its devices are advertised Unhealthy"); c == 0 {
		t.Errorf("gpulet's log does not say the lost GPU is advertised Unhealthy")
	}
	if err := n.Sim("restore", "--gpu", "2"); err != nil {
		t.Fatalf("%v", err)
	}
	expectAllocatable(t, "nvidia.com/gpu", gpus)
	expectAllocatableIDs(t, "after sim restore --gpu 2", uuids)
	g.expectSame(t)
}

func reloadRejectedScenario(t *T) {
	n := t.N
	uuids := profileGPUs(t)
	gpus := len(uuids)
	reconfigure(t, timeSlicingConfig(4), map[string]int{"nvidia.com/gpu": 4 * gpus})
	defer restoreNoSharing(t)
	g := currentGpulet(t, "nvidia.com/gpu")
	if err := n.Sim("xid", "--gpu", "1", "--xid", "79"); err != nil {
		t.Fatalf("%v", err)
	}
	expectAllocatable(t, "nvidia.com/gpu", 4*(gpus-1))
	// replicas: 1 is refused (time-slicing needs 2 or more). Watched from
	// before the SIGHUP.
	w := watchAllocatable(t, "nvidia.com/gpu")
	g.reload(t, timeSlicingConfig(1), node.ReloadRejected)
	w.waitStatusUpdates(t)
	lo, hi := w.stop()
	if lo != int64(4*(gpus-1)) || hi != int64(4*(gpus-1)) {
		t.Errorf("allocatable nvidia.com/gpu was %d..%d during and after the rejected reload, want %d", lo, hi, 4*(gpus-1))
	}
	expectAllocatableIDs(t, "after the rejected reload, GPU 1 down", except(replicaIDs(uuids, 4), replicaIDs(uuids[1:2], 4)...))
	if log, _ := n.GpuletLog(t.Ctx, g.pod.Name); !strings.Contains(log, "replicas") {
		t.Errorf("the rejection does not name replicas")
	}
	if err := n.Sim("xid", "--gpu", "3", "--xid", "79"); err != nil {
		t.Fatalf("%v", err)
	}
	expectAllocatable(t, "nvidia.com/gpu", 4*(gpus-2))
	expectAllocatableIDs(t, "after Xid 79 on GPU 3, GPUs 1 and 3 down",
		except(replicaIDs(uuids, 4), replicaIDs([]string{uuids[1], uuids[3]}, 4)...))
	g.expectSame(t)
	// A valid file again, as the operator leaves it.
	if _, err := n.SetConfig(t.Ctx, g.pid, timeSlicingConfig(4)); err != nil {
		t.Errorf("%v", err)
	}
}

func reloadReplicasScenario(t *T) {
	n := t.N
	uuids := profileGPUs(t)
	gpus := len(uuids)
	reconfigure(t, timeSlicingConfig(4), map[string]int{"nvidia.com/gpu": 4 * gpus})
	defer restoreNoSharing(t)
	g := currentGpulet(t, "nvidia.com/gpu")
	if err := n.Sim("xid", "--gpu", "6", "--xid", "79"); err != nil {
		t.Fatalf("%v", err)
	}
	expectAllocatable(t, "nvidia.com/gpu", 4*(gpus-1))
	// Watched from before the SIGHUP: the count goes from 4 to 2 replicas of
	// the healthy GPUs and through nothing else (2*gpus would be GPU 6
	// advertised Healthy by the reload, if only for one status update).
	w := watchAllocatable(t, "nvidia.com/gpu")
	sent := g.reload(t, timeSlicingConfig(2), node.ReloadAccepted)
	expectAllocatable(t, "nvidia.com/gpu", 2*(gpus-1))
	t.Figure("SIGHUP -> new replica count in the API server", time.Since(sent))
	// Not a passing value on the way to 16: two more status updates.
	w.waitStatusUpdates(t)
	w.stop()
	if other := w.others(int64(4*(gpus-1)), int64(2*(gpus-1))); len(other) > 0 {
		t.Errorf("allocatable nvidia.com/gpu went through %v during the reload, want only %d then %d", other, 4*(gpus-1), 2*(gpus-1))
	}
	if got, _ := n.Allocatable(t.Ctx, "nvidia.com/gpu"); got != int64(2*(gpus-1)) {
		t.Errorf("allocatable nvidia.com/gpu is %d after the reload, want %d", got, 2*(gpus-1))
	}
	expectAllocatableIDs(t, "after the reload to 2 replicas, GPU 6 down", except(replicaIDs(uuids, 2), replicaIDs(uuids[6:7], 2)...))
	g.expectSame(t)
}

func reloadXidScenario(t *T) {
	n := t.N
	uuids := profileGPUs(t)
	gpus := len(uuids)
	reconfigure(t, timeSlicingConfig(2), map[string]int{"nvidia.com/gpu": 2 * gpus})
	defer restoreNoSharing(t)
	g := currentGpulet(t, "nvidia.com/gpu")
	for round := 1; round <= 3; round++ {
		replicas := 3
		if round%2 == 0 {
			replicas = 2
		}
		if _, err := n.SetConfig(t.Ctx, g.pid, timeSlicingConfig(replicas)); err != nil {
			t.Fatalf("%v", err)
		}
		before, err := n.CountInLog(t.Ctx, g.pod.Name, node.ReloadAccepted)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if err := n.Sighup(g.pid); err != nil {
			t.Fatalf("%v", err)
		}
		gpu := round + 3
		if err := n.Sim("xid", "--gpu", fmt.Sprint(gpu), "--xid", "79"); err != nil {
			t.Fatalf("%v", err)
		}
		if err := n.WaitInLog(t.Ctx, g.pod.Name, node.ReloadAccepted, before+1); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// GPUs 4..gpu are down.
		if err := n.WaitAllocatable(t.Ctx, "nvidia.com/gpu", replicas*(gpus-round)); err != nil {
			got, _ := n.Allocatable(t.Ctx, "nvidia.com/gpu")
			t.Fatalf("round %d (%d replicas, Xid 79 on GPU %d): %v (it is %d)", round, replicas, gpu, err, got)
		}
		expectAllocatableIDs(t, fmt.Sprintf("round %d, GPUs 4..%d down", round, gpu),
			except(replicaIDs(uuids, replicas), replicaIDs(uuids[4:gpu+1], replicas)...))
	}
	status, err := n.SimOutput("status")
	if err != nil {
		t.Fatalf("%v", err)
	}
	if unrouted := simUnrouted(status); unrouted != 0 {
		t.Errorf("the simulator has %d unrouted events (an Xid no event set was waiting for)\n%s", unrouted, status)
	}
	g.expectSame(t)
}

// simUnrouted reads events.unrouted from `gpulet sim status`; -1 when the
// output does not say.
func simUnrouted(status string) int {
	var s struct {
		Events struct {
			Unrouted *int `json:"unrouted"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(status), &s); err != nil || s.Events.Unrouted == nil {
		return -1
	}
	return *s.Events.Unrouted
}
