package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"gpulet.dev/test/cluster/internal/sandbox"
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
	if err := n.runtimeSettingFor(cm.Data["config.yaml"]); err != nil {
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

// SimOutput runs `gpulet sim <args>` like Sim and returns what it printed.
func (n *Node) SimOutput(args ...string) (string, error) {
	cmd := exec.Command(n.Cfg.Gpulet, append([]string{"sim", "--socket", SimSocket}, args...)...)
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("gpulet sim %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// GpuletPid returns the PID (in the fixture's PID namespace) of the gpulet
// process running in a pod: the process named gpulet whose cgroup is the
// pod's (the kubelet's cgroupfs driver names it pod<UID>).
func (n *Node) GpuletPid(pod *corev1.Pod) (int, error) {
	for _, pid := range sandbox.OtherPids() {
		if sandbox.Comm(pid) != "gpulet" {
			continue
		}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			continue
		}
		if strings.Contains(string(cg), "/pod"+string(pod.UID)+"/") {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no gpulet process in pod %s (UID %s)", pod.Name, pod.UID)
}

// ConfigInPod is the config file as gpulet's container sees it
// (/etc/gpulet/config.yaml, the ConfigMap volume).
func (n *Node) ConfigInPod(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/etc/gpulet/config.yaml", pid))
	return string(b), err
}

// SetConfig puts config (as ConfigMap takes it) into the ConfigMap, the way
// an operator edits it, and waits until the kubelet has synced the new text
// into the volume of gpulet's container (pid), as the operator waits before
// sending SIGHUP. It returns the text.
func (n *Node) SetConfig(ctx context.Context, pid int, config string) (string, error) {
	cm, err := n.ConfigMap(config)
	if err != nil {
		return "", err
	}
	if err := n.runtimeSettingFor(cm.Data["config.yaml"]); err != nil {
		return "", err
	}
	if _, err := n.Client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return "", err
	}
	want := cm.Data["config.yaml"]
	err = n.waitFor(ctx, "the kubelet to sync the ConfigMap into gpulet's container", 60*time.Second,
		func(ctx context.Context) (bool, error) {
			got, err := n.ConfigInPod(pid)
			return err == nil && got == want, nil
		})
	return want, err
}

// Log lines of `gpulet plugin` that end a reload (docs/configuration.md).
const (
	ReloadAccepted = "configuration reloaded"
	ReloadRejected = "configuration not reloaded, keeping the previous one"
)

// CountInLog counts the lines of gpulet's log (pod) that contain what.
func (n *Node) CountInLog(ctx context.Context, pod, what string) (int, error) {
	log, err := n.GpuletLog(ctx, pod)
	if err != nil {
		return 0, err
	}
	c := 0
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, what) {
			c++
		}
	}
	return c, nil
}

// WaitInLog waits until gpulet's log (pod) holds at least `want` lines
// containing what.
func (n *Node) WaitInLog(ctx context.Context, pod, what string, want int) error {
	return n.waitFor(ctx, fmt.Sprintf("%d line(s) %q in gpulet's log", want, what), 60*time.Second,
		func(ctx context.Context) (bool, error) {
			got, err := n.CountInLog(ctx, pod, what)
			return err == nil && got >= want, nil
		})
}

// Sighup sends SIGHUP to gpulet's process, as docs/configuration.md tells
// users to reload the file.
func (n *Node) Sighup(pid int) error {
	return syscall.Kill(pid, syscall.SIGHUP)
}
