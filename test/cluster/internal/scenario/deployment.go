package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func init() {
	register(Scenario{
		Name: "deployment",
		Doc: "10 one-GPU replicas on the 8-GPU node: 8 run on 8 distinct GPUs, 2 stay Pending " +
			"with Insufficient nvidia.com/gpu; scaling down frees GPUs that new pods get",
		Run: deploymentScenario,
	})
}

func int32p(v int32) *int32 { return &v }

func gpuDeployment(name string, replicas int32) *appsv1.Deployment {
	pod := gpuPod("", 1, "nvidia.com/gpu")
	labels := map[string]string{"app": name}
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: int32p(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pod.Spec,
			},
		},
	}
}

type podCounts struct {
	running, pending map[string]bool
	insufficient     int
}

func countPods(ctx context.Context, t *T, selector string) (podCounts, error) {
	c := podCounts{running: map[string]bool{}, pending: map[string]bool{}}
	pods, err := t.N.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return c, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			c.running[p.Name] = true
		case corev1.PodPending:
			c.pending[p.Name] = true
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse &&
					cond.Reason == corev1.PodReasonUnschedulable && strings.Contains(cond.Message, "Insufficient nvidia.com/gpu") {
					c.insufficient++
				}
			}
		}
	}
	return c, nil
}

// waitPods waits until the Deployment has `running` Running pods and
// `pending` Pending ones, all Pending ones refused by the scheduler for
// lack of nvidia.com/gpu, and no pod is being deleted.
func waitPods(t *T, selector string, running, pending int) podCounts {
	var last podCounts
	err := t.N.WaitFor(t.Ctx, fmt.Sprintf("%d running and %d unschedulable pods", running, pending), 180*time.Second,
		func(ctx context.Context) (bool, error) {
			pods, err := t.N.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, nil
			}
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					return false, nil
				}
			}
			c, err := countPods(ctx, t, selector)
			if err != nil {
				return false, nil
			}
			last = c
			return len(c.running) == running && len(c.pending) == pending && c.insufficient == pending, nil
		})
	if err != nil {
		t.Fatalf("%v (last: %d running, %d pending, %d with Insufficient nvidia.com/gpu)\n%s", err,
			len(last.running), len(last.pending), last.insufficient, t.N.Kubectl("get", "pods", "-o", "wide", "-l", selector))
	}
	return last
}

// gpusOf returns the GPU each running pod was given (one each), failing
// when two share one.
func gpusOf(t *T, pods map[string]bool) map[string]string {
	owner := map[string]string{}
	byPod := map[string]string{}
	for name := range pods {
		ids := allocatedDevices(t, name, "nvidia.com/gpu")
		if len(ids) != 1 {
			t.Errorf("pod %s was given %v, want one GPU", name, ids)
			continue
		}
		if other, ok := owner[ids[0]]; ok {
			t.Errorf("pods %s and %s were both given %s", name, other, ids[0])
		}
		owner[ids[0]] = name
		byPod[name] = ids[0]
	}
	return byPod
}

func scale(t *T, name string, replicas int32) {
	s, err := t.N.Client.AppsV1().Deployments(ns).GetScale(t.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get scale: %v", err)
	}
	s.Spec.Replicas = replicas
	if _, err := t.N.Client.AppsV1().Deployments(ns).UpdateScale(t.Ctx, name, s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scale to %d: %v", replicas, err)
	}
}

func deploymentScenario(t *T) {
	n := t.N
	gpus := len(n.Machine.GPUs)
	const name = "gpu-deploy"
	selector := "app=" + name
	start := time.Now()
	if _, err := n.Client.AppsV1().Deployments(ns).Create(t.Ctx, gpuDeployment(name, int32(gpus+2)), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	defer func() {
		_ = n.Client.AppsV1().Deployments(ns).Delete(t.Ctx, name, metav1.DeleteOptions{})
		_ = n.WaitFor(t.Ctx, "the deployment's pods to be gone", 120*time.Second, func(ctx context.Context) (bool, error) {
			pods, err := n.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			return err == nil && len(pods.Items) == 0, nil
		})
	}()
	c := waitPods(t, selector, gpus, 2)
	t.Figure(fmt.Sprintf("kubectl apply -> Running, %d one-GPU pods at once", gpus), time.Since(start))
	first := gpusOf(t, c.running)
	if len(first) != gpus {
		t.Fatalf("%d pods hold a GPU, want %d", len(first), gpus)
	}
	if got, _ := n.Allocatable(t.Ctx, "nvidia.com/gpu"); got != int64(gpus) {
		t.Errorf("allocatable nvidia.com/gpu = %d with every GPU in use, want %d (allocatable is not reduced by use)", got, gpus)
	}

	half := int32(gpus / 2)
	scale(t, name, half)
	c = waitPods(t, selector, int(half), 0)
	kept := map[string]bool{}
	freed := map[string]bool{}
	for pod, gpu := range first {
		if c.running[pod] {
			kept[gpu] = true
		} else {
			freed[gpu] = true
		}
	}
	scale(t, name, int32(gpus))
	c = waitPods(t, selector, gpus, 0)
	second := gpusOf(t, c.running)
	got := map[string]bool{}
	for pod, gpu := range second {
		if _, old := first[pod]; !old {
			got[gpu] = true
		}
	}
	expectSet(t, "GPUs of the pods created after scaling down", got, freed)
}
