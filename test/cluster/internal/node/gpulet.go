package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// GpuletLog returns the log of gpulet's current pod.
func (n *Node) GpuletLog(ctx context.Context, pod string) (string, error) {
	b, err := n.Client.CoreV1().Pods(gpuletNamespace).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
	return string(b), err
}

// Registrations counts the "registered <resource> (" lines in a gpulet
// pod's log: how often it registered that resource with the kubelet.
func (n *Node) Registrations(ctx context.Context, pod, resource string) (int, error) {
	log, err := n.GpuletLog(ctx, pod)
	if err != nil {
		return 0, err
	}
	return strings.Count(log, "] registered "+resource+" ("), nil
}

// WaitRegistrations waits until pod has registered resource `want` times.
func (n *Node) WaitRegistrations(ctx context.Context, pod, resource string, want int) error {
	return n.waitFor(ctx, fmt.Sprintf("gpulet to register %s %d time(s)", resource, want), 120*time.Second,
		func(ctx context.Context) (bool, error) {
			got, err := n.Registrations(ctx, pod, resource)
			if err != nil {
				return false, nil
			}
			if got > want {
				return false, fmt.Errorf("gpulet registered %s %d times, want %d", resource, got, want)
			}
			return got == want, nil
		})
}

// Reconfigure puts config into the ConfigMap and restarts gpulet's pods as
// docs/install.md says (`kubectl rollout restart daemonset/gpulet`), then
// waits for the new pod to register every resource in want and for the
// node's allocatable to equal want.
func (n *Node) Reconfigure(ctx context.Context, config string, want map[string]int) error {
	cm, err := n.ConfigMap(config)
	if err != nil {
		return err
	}
	if _, err := n.Client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return err
	}
	old, err := n.GpuletPod(ctx)
	if err != nil || old == nil {
		return fmt.Errorf("no gpulet pod before the restart (%v)", err)
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`,
		time.Now().Format(time.RFC3339Nano))
	if _, err := n.Client.AppsV1().DaemonSets(gpuletNamespace).Patch(ctx, "gpulet", types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	if err := n.WaitGpuletRunning(ctx, string(old.UID)); err != nil {
		return err
	}
	return n.WaitResources(ctx, want)
}

// WaitResources waits until gpulet's current pod registered each resource
// once and the node's allocatable equals want for each.
func (n *Node) WaitResources(ctx context.Context, want map[string]int) error {
	pod, err := n.GpuletPod(ctx)
	if err != nil || pod == nil {
		return fmt.Errorf("no gpulet pod (%v)", err)
	}
	for res, count := range want {
		if count == 0 {
			continue
		}
		if err := n.WaitRegistrations(ctx, pod.Name, res, 1); err != nil {
			return err
		}
	}
	for res, count := range want {
		if err := n.WaitAllocatable(ctx, res, count); err != nil {
			return err
		}
	}
	return nil
}

// Sim runs `gpulet sim <args>` against the simulator inside gpulet's pod.
func (n *Node) Sim(args ...string) error {
	cmd := exec.Command(n.Cfg.Gpulet, append([]string{"sim", "--socket", SimSocket}, args...)...)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("gpulet sim %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// GPUIndex returns the index of the GPU with a UUID, or -1.
func (n *Node) GPUIndex(uuid string) int {
	for _, g := range n.Machine.GPUs {
		if g.UUID == uuid {
			return g.Index
		}
	}
	return -1
}
