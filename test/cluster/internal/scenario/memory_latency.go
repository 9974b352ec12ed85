package scenario

import (
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

// A measurement, not a test: `make bench` runs it (docs/benchmarks.md),
// ctest does not. Nothing is asserted about the times.
func init() {
	register(Scenario{
		Name: "memory-latency",
		Doc: "(a measurement for make bench) creation -> Running of 50 pods of 1-8 GiB that all fit at once, " +
			"through gpulet extender, against the same 50 pods asking nvidia.com/gpu: 1 per container " +
			"(12 time-slicing replicas per GPU, so that all fit too) with the scheduler alone",
		Machine: "mixed-memory",
		Run:     memoryLatencyScenario,
	})
}

// replicasConfig makes 12 replicas of each GPU: 72 devices of
// nvidia.com/gpu, room for the 50 pods' containers.
const replicasConfig = `version: v1
flags:
  failOnInitError: true
  plugin:
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 12
`

func memoryLatencyScenario(t *T) {
	rng := seed(t, "memory-latency")
	sizes := map[string][]int{}
	var names []string
	for i := 0; i < memPods; i++ {
		name := fmt.Sprintf("lat-%02d", i)
		names = append(names, name)
		if rng.Intn(10) < 3 {
			sizes[name] = []int{1 + rng.Intn(4), 1 + rng.Intn(4)}
		} else {
			sizes[name] = []int{1 + rng.Intn(8)}
		}
	}
	pods := func(resourceName string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, name := range names {
			out = append(out, memPod(name, sizes[name], resourceName))
		}
		return out
	}

	shares := func() latencies {
		_, undo := setUpMemoryShares(t)
		defer undo()
		defer deleteAllMemPods(t)
		return timeToRunning(t, pods(memResource))
	}()
	report(t, "memory shares through the extender", shares)

	containers := 0
	for _, s := range sizes {
		containers += len(s)
	}
	defer func() {
		if err := t.N.Reconfigure(t.Ctx, node.NoSharingConfig, map[string]int{"nvidia.com/gpu": len(t.N.Machine.GPUs)}); err != nil {
			t.Errorf("gpulet back without sharing: %v", err)
		}
	}()
	if err := t.N.Reconfigure(t.Ctx, replicasConfig, map[string]int{"nvidia.com/gpu": 12 * len(t.N.Machine.GPUs)}); err != nil {
		t.Fatalf("gpulet with 12 replicas per GPU: %v", err)
	}
	defer deleteAllMemPods(t)
	whole := timeToRunning(t, pods("nvidia.com/gpu"))
	report(t, fmt.Sprintf("nvidia.com/gpu: 1 (%d containers), no extender", containers), whole)
}

// latencies are the creation -> Running times of a set of pods, and the
// time from the first creation to the last Running.
type latencies struct {
	each  []time.Duration
	total time.Duration
}

// timeToRunning creates pods all at once and times each from just before
// its create call until a list of the pods (every 50 ms) shows it Running.
func timeToRunning(t *T, pods []*corev1.Pod) latencies {
	var mu sync.Mutex
	created := map[string]time.Time{}
	start := time.Now()
	go func() {
		var wg sync.WaitGroup
		for _, p := range pods {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mu.Lock()
				created[p.Name] = time.Now()
				mu.Unlock()
				if _, err := t.N.Client.CoreV1().Pods(ns).Create(t.Ctx, p, metav1.CreateOptions{}); err != nil {
					t.N.Cfg.Log("create pod %s: %v", p.Name, err)
				}
			}()
		}
		wg.Wait()
	}()
	ranAt := map[string]time.Time{}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	// Bounds only a failure: a pod that never runs.
	limit := time.After(5 * time.Minute)
	for len(ranAt) < len(pods) {
		select {
		case <-tick.C:
		case <-limit:
			t.Fatalf("%d of %d pods running after 5 minutes", len(ranAt), len(pods))
		case <-t.Ctx.Done():
			t.Fatalf("interrupted")
		}
		list, err := t.N.Client.CoreV1().Pods(ns).List(t.Ctx, metav1.ListOptions{LabelSelector: memPodLabel})
		if err != nil {
			continue
		}
		now := time.Now()
		for i := range list.Items {
			p := &list.Items[i]
			if p.Status.Phase == corev1.PodFailed {
				t.Fatalf("pod %s failed: %s: %s", p.Name, p.Status.Reason, p.Status.Message)
			}
			if _, seen := ranAt[p.Name]; !seen && running(p) {
				ranAt[p.Name] = now
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var l latencies
	for name, at := range ranAt {
		l.each = append(l.each, at.Sub(created[name]))
		l.total = max(l.total, at.Sub(start))
	}
	sort.Slice(l.each, func(i, j int) bool { return l.each[i] < l.each[j] })
	return l
}

func report(t *T, what string, l latencies) {
	n := len(l.each)
	if n == 0 {
		return
	}
	at := func(p int) time.Duration { return l.each[(n*p+99)/100-1] }
	t.FigureText("memory-latency: "+what, fmt.Sprintf("p50 %.2f s, p90 %.2f s, max %.2f s; all %d running after %.2f s",
		at(50).Seconds(), at(90).Seconds(), l.each[n-1].Seconds(), n, l.total.Seconds()))
}
