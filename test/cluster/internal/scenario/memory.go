package scenario

// GPU-memory shares (docs/sharing.md) through the scheduler extender
// (docs/extender.md) on a node of mixed GPU sizes (machine mixed-memory:
// 3 x 80 GB, 3 x 40 GB). gpulet runs with deploy/optional's memory-share
// RBAC under the own-node admission policy and nothing more; `gpulet
// extender` runs with deploy/extender's RBAC and kube-scheduler with
// deploy/extender's scheduler configuration, over TLS.

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

// Seed of the memory scenarios' random pods (sizes, containers, order,
// bursts, pods deleted); 0 takes one from the clock. gpulet-cluster's
// --seed sets it; the scenario logs the seed it used.
var Seed int64

const (
	memResource       = "nvidia.com/gpu-memory"
	memPodLabel       = "gpulet-memory"
	memAnnotation     = "gpulet.dev/gpu-memory"
	pendingAnnotation = "gpulet.dev/gpu-memory-pending"
	unitMiB           = 1024
)

// memoryConfig shares every GPU's memory in units of 1 GiB (the defaults
// of sharing.memory).
const memoryConfig = `version: v1
flags:
  failOnInitError: true
  plugin:
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
sharing:
  memory: {}
`

// memPod is a pod of busybox containers asking for units of GPU memory
// each (resource "nvidia.com/gpu" asks for one GPU instead); the
// containers print their device nodes and environment, then sleep until
// stopped.
func memPod(name string, units []int, resourceName string) *corev1.Pod {
	grace := int64(5)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{memPodLabel: "1"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			EnableServiceLinks:            new(bool),
		},
	}
	for i, u := range units {
		q := resource.MustParse(fmt.Sprint(u))
		if resourceName == "nvidia.com/gpu" {
			q = resource.MustParse("1")
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name:            fmt.Sprintf("c%d", i),
			Image:           node.WorkloadImage,
			ImagePullPolicy: corev1.PullNever,
			Command: []string{"/bin/sh", "-c", `echo "== dev"; ls /dev; echo "== env"; env; echo "== end"
trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceName(resourceName): q}},
		})
	}
	return p
}

// randomPods are n pods of 1-40 GiB, three in ten with two containers
// (1-20 GiB each), from rng.
func randomPods(rng *rand.Rand, n int) map[string][]int {
	pods := map[string][]int{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("mem-%02d", i)
		if rng.Intn(10) < 3 {
			pods[name] = []int{1 + rng.Intn(20), 1 + rng.Intn(20)}
		} else {
			pods[name] = []int{1 + rng.Intn(40)}
		}
	}
	return pods
}

func seed(t *T, scenario string) *rand.Rand {
	s := Seed
	if s == 0 {
		s = time.Now().UnixNano() % 1000000
	}
	t.N.Cfg.Log("%s: seed %d (replay with gpulet-cluster --seed %d)", scenario, s, s)
	t.FigureText(scenario+": seed", fmt.Sprint(s))
	return rand.New(rand.NewSource(s))
}

// memShares is the node set up for memory shares.
type memShares struct {
	ext   *node.Extender
	units map[string]int // GPU UUID -> units
	total int
}

// setUpMemoryShares applies the memory-share RBAC and the own-node
// admission policy, reconfigures gpulet for memory shares, starts the
// extender and points kube-scheduler at it. The returned function undoes
// everything, gpulet back to no sharing.
func setUpMemoryShares(t *T) (*memShares, func()) {
	n := t.N
	var undo []func(context.Context) error
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			if err := undo[i](t.Ctx); err != nil {
				t.Errorf("undoing the memory-share set-up: %v", err)
			}
		}
	}
	done := false
	defer func() {
		if !done {
			cleanup()
		}
	}()
	rbac, err := n.ApplyDeployFile(t.Ctx, "optional/memory-shares-rbac.yaml")
	if err != nil {
		t.Fatalf("%v", err)
	}
	undo = append(undo, rbac)
	undo = append(undo, applyOwnNodePolicy(t))
	m := &memShares{units: map[string]int{}}
	for _, g := range n.Machine.GPUs {
		m.units[g.UUID] = int(g.MemoryBytes / (unitMiB << 20))
		m.total += m.units[g.UUID]
	}
	undo = append(undo, func(ctx context.Context) error {
		// Kept with the logs: the pod's own log goes with the pod.
		if pod, err := n.GpuletPod(ctx); err == nil && pod != nil {
			if log, err := n.GpuletLog(ctx, pod.Name); err == nil {
				_ = os.WriteFile(filepath.Join(n.Cfg.Paths.Logs(), "gpulet-memory-shares.log"), []byte(log), 0644)
			}
		}
		return n.Reconfigure(ctx, node.NoSharingConfig, map[string]int{"nvidia.com/gpu": len(n.Machine.GPUs), memResource: 0})
	})
	if err := n.Reconfigure(t.Ctx, memoryConfig, map[string]int{memResource: m.total, "nvidia.com/gpu": 0}); err != nil {
		t.Fatalf("gpulet with memory shares: %v", err)
	}
	if err := n.WaitNodeMeta(t.Ctx, "the node agent's "+memAnnotation+" annotation", func(_, a map[string]string) bool {
		mem, err := parseMemAnnotation(a[memAnnotation])
		return err == nil && len(mem.GPUs) == len(n.Machine.GPUs)
	}); err != nil {
		t.Fatalf("%v", err)
	}
	ext, stop, err := n.StartExtender(t.Ctx, "binpack")
	if err != nil {
		t.Fatalf("%v", err)
	}
	undo = append(undo, stop)
	m.ext = ext
	done = true
	return m, cleanup
}

// createPods creates pods at once (one goroutine each) and returns when
// every create returned.
func createPods(t *T, pods []*corev1.Pod) {
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := t.N.Client.CoreV1().Pods(ns).Create(t.Ctx, p, metav1.CreateOptions{}); err != nil {
				errs <- fmt.Errorf("create pod %s: %w", p.Name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v", err)
	}
}

// deleteMemPods deletes pods by name and waits until they are gone.
func deleteMemPods(t *T, names []string) {
	for _, name := range names {
		if err := t.N.Client.CoreV1().Pods(ns).Delete(t.Ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete pod %s: %v", name, err)
		}
	}
	waitMemPodsGone(t, names)
}

func waitMemPodsGone(t *T, names []string) {
	if err := t.N.WaitFor(t.Ctx, fmt.Sprintf("%d deleted pod(s) to be gone", len(names)), 120*time.Second,
		func(ctx context.Context) (bool, error) {
			for _, name := range names {
				if _, err := t.N.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false, nil
				}
			}
			return true, nil
		}); err != nil {
		t.Fatalf("%v", err)
	}
}

// deleteAllMemPods deletes every pod of the memory scenarios (at the end,
// or after a failure).
func deleteAllMemPods(t *T) {
	pods, err := t.N.Client.CoreV1().Pods(ns).List(t.Ctx, metav1.ListOptions{LabelSelector: memPodLabel})
	if err != nil {
		t.Errorf("list pods: %v", err)
		return
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
		if err := t.N.Client.CoreV1().Pods(ns).Delete(t.Ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod %s: %v", p.Name, err)
		}
	}
	if err := t.N.WaitFor(t.Ctx, "the memory scenario's pods to be gone", 120*time.Second, func(ctx context.Context) (bool, error) {
		left, err := t.N.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: memPodLabel})
		return err == nil && len(left.Items) == 0, nil
	}); err != nil {
		t.Errorf("%v (pods %v)", err, names)
	}
}
