package scenario

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
	"gpulet.dev/test/cluster/internal/proc"
)

// A measurement, not a test: `make bench` runs it (docs/benchmarks.md),
// ctest does not. Nothing is asserted about the times.
func init() {
	register(Scenario{
		Name: "dra-claim-latency", Machine: draMachine, DRA: true,
		Doc: "(a measurement for make bench) ResourceClaim creation -> pod Running through gpulet dra, " +
			"for 1 pod and for 8 pods at once (one GPU each), and gpulet dra's RSS",
		Run: draLatencyScenario,
	})
}

// draLatencyRun creates count ResourceClaims of one GPU and a pod using
// each, and returns the time from the first claim's create call until all
// the pods run; the pods are deleted and their claims unprepared again.
func draLatencyRun(t *T, count int) time.Duration {
	var names []string
	var pods []*corev1.Pod
	for i := 0; i < count; i++ {
		name := fmt.Sprintf("lat-%d-%d", count, i)
		names = append(names, name)
		pods = append(pods, claimPod(name, "", name))
	}
	start := time.Now()
	for _, name := range names {
		createClaim(t, name, claimRequest{class: node.DRADriver, count: 1})
	}
	for _, p := range pods {
		if _, err := t.N.Client.CoreV1().Pods(ns).Create(t.Ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
	}
	for _, name := range names {
		waitPodRunning(t, name)
	}
	took := time.Since(start)
	var allocs []allocation
	for _, name := range names {
		allocs = append(allocs, claimAllocation(t, name))
	}
	deletePods(t, names...)
	expectUnprepared(t, allocs...)
	for _, name := range names {
		deleteClaim(t, name)
	}
	return took
}

func draLatencyScenario(t *T) {
	n := t.N
	t.Figure("claim -> Running, 1 pod (first)", draLatencyRun(t, 1))
	t.Figure("claim -> Running, 1 pod (second)", draLatencyRun(t, 1))
	t.Figure("claim -> Running, 8 pods at once", draLatencyRun(t, 8))
	pod, err := n.GpuletPod(t.Ctx)
	if err != nil || pod == nil {
		t.Fatalf("no gpulet dra pod (%v)", err)
	}
	pid, err := n.GpuletPid(pod)
	if err != nil {
		t.Fatalf("%v", err)
	}
	rss, err := proc.RSS(pid)
	if err != nil {
		t.Fatalf("%v", err)
	}
	peak, _ := proc.PeakRSS(pid)
	t.FigureText("gpulet dra RSS after the runs", fmt.Sprintf("%.1f MiB (peak %.1f MiB)",
		float64(rss)/(1<<20), float64(peak)/(1<<20)))
}
