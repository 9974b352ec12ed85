package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

const ns = "default"

// reportScript prints what the container sees, then sleeps until stopped.
const reportScript = `echo "== dev"; ls /dev
echo "== nvidia-caps"; ls /dev/nvidia-caps 2>/dev/null
echo "== vfio"; ls /dev/vfio 2>/dev/null
echo "== cgroup devices"; cat /sys/fs/cgroup/devices/devices.list 2>/dev/null
echo "== env"; env
echo "== mounts"; cat /proc/self/mountinfo
echo "== end"
trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`

// gpuPod is a busybox pod that reports its view and keeps running.
func gpuPod(name string, gpus int, resourceName string) *corev1.Pod {
	c := corev1.Container{
		Name:            "main",
		Image:           node.WorkloadImage,
		ImagePullPolicy: corev1.PullNever,
		Command:         []string{"/bin/sh", "-c", reportScript},
	}
	if gpus > 0 {
		q := resource.MustParse(fmt.Sprint(gpus))
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceName(resourceName): q}
	}
	grace := int64(5)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"gpulet-test": "1"}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{c},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			EnableServiceLinks:            new(bool),
		},
	}
}

// createAndWaitRunning creates pods and waits until all run; returns the
// time from the first create to the last Running.
func createAndWaitRunning(t *T, pods ...*corev1.Pod) time.Duration {
	start := time.Now()
	for _, p := range pods {
		if _, err := t.N.Client.CoreV1().Pods(p.Namespace).Create(t.Ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
	}
	for _, p := range pods {
		waitPodRunning(t, p.Name)
	}
	return time.Since(start)
}

func waitPodRunning(t *T, name string) {
	err := t.N.WaitFor(t.Ctx, "pod "+name+" to run", 120*time.Second, func(ctx context.Context) (bool, error) {
		p, err := t.N.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("pod %s ended: %s", name, p.Status.Phase)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				return false, fmt.Errorf("pod %s: %s: %s", name, w.Reason, w.Message)
			}
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, t.N.Kubectl("describe", "pod", "-n", ns, name))
	}
}

// podReport waits for the pod's report and splits it into sections.
func podReport(t *T, name string) map[string][]string { return podReportIn(t, ns, name) }

// podReportIn is podReport for a pod of namespace.
func podReportIn(t *T, namespace, name string) map[string][]string {
	var text string
	err := t.N.WaitFor(t.Ctx, "pod "+name+"'s report", 60*time.Second, func(ctx context.Context) (bool, error) {
		b, err := t.N.Client.CoreV1().Pods(namespace).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		text = string(b)
		return strings.Contains(text, "== end"), nil
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	// Kept with the logs: the container's view, for whoever debugs a failure.
	_ = os.WriteFile(filepath.Join(t.N.Cfg.Paths.Logs(), "pod-"+name+".txt"), []byte(text), 0644)
	sections := map[string][]string{}
	cur := ""
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "== ") {
			cur = strings.TrimPrefix(l, "== ")
			continue
		}
		if l != "" {
			sections[cur] = append(sections[cur], l)
		}
	}
	return sections
}

func deletePods(t *T, names ...string) { deletePodsIn(t, ns, names...) }

// deletePodsIn deletes pods of namespace and waits until they are gone.
func deletePodsIn(t *T, namespace string, names ...string) {
	for _, name := range names {
		err := t.N.Client.CoreV1().Pods(namespace).Delete(t.Ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod %s: %v", name, err)
		}
	}
	for _, name := range names {
		err := t.N.WaitFor(t.Ctx, "pod "+name+" to be gone", 120*time.Second, func(ctx context.Context) (bool, error) {
			_, err := t.N.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("%v", err)
		}
	}
}

// checkpoint is the kubelet's device manager checkpoint: which devices it
// gave to which container. It is the kubelet's own record of allocation.
type checkpoint struct {
	Data struct {
		PodDeviceEntries []struct {
			PodUID        string
			ContainerName string
			ResourceName  string
			DeviceIDs     map[string][]string
		}
	}
}

// allocatedDevices returns the device IDs the kubelet gave to a pod's
// container for a resource.
func allocatedDevices(t *T, podName, resourceName string) []string {
	p, err := t.N.Client.CoreV1().Pods(ns).Get(t.Ctx, podName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", podName, err)
	}
	b, err := os.ReadFile(filepath.Join("/var/lib/kubelet/device-plugins", "kubelet_internal_checkpoint"))
	if err != nil {
		t.Fatalf("kubelet checkpoint: %v", err)
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatalf("kubelet checkpoint: %v", err)
	}
	var ids []string
	for _, e := range cp.Data.PodDeviceEntries {
		if e.PodUID == string(p.UID) && e.ResourceName == resourceName {
			for _, l := range e.DeviceIDs {
				ids = append(ids, l...)
			}
		}
	}
	return ids
}
