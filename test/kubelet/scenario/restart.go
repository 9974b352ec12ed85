package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gpulet.dev/test/kubelet/harness"
	"gpulet.dev/test/kubelet/internal/mountns"
)

func runKubeletRestart(e *Env) error {
	kept, err := e.Admit("survivor", 1)
	if err != nil {
		return err
	}
	e.step("pod %s holds %v across the restarts", kept.Pod.Name, kept.IDs)
	for i := 1; i <= e.Spec.KubeletRestarts; i++ {
		before := harness.Registrations(e.Spec.Resource)
		start := time.Now()
		if err := e.RestartKubelet(); err != nil {
			return fmt.Errorf("kubelet restart %d: %w", i, err)
		}
		if err := e.WaitRegistered(before); err != nil {
			return fmt.Errorf("after kubelet restart %d of %d (which deleted the plugin's socket): %w",
				i, e.Spec.KubeletRestarts, err)
		}
		e.step("kubelet restart %d/%d: plugin re-registered after %v", i, e.Spec.KubeletRestarts, since(start))
	}
	if err := e.checkStable(kept); err != nil {
		return fmt.Errorf("after the restarts (checkpoint): %w", err)
	}
	msg, err := e.Reject("all", e.Spec.Devices)
	if err != nil {
		return fmt.Errorf("the restarted kubelet forgot pod %s's devices: %w", kept.Pod.Name, err)
	}
	e.step("the restarted kubelet still counts %s's device as used: %s", kept.Pod.Name, msg)
	e.Pods.Delete(kept.Pod)
	return e.allocationWorks("after the restarts and deleting " + kept.Pod.Name)
}

// allocationWorks admits and deletes a one-device pod, proving the kubelet
// can reach the plugin's current endpoint.
func (e *Env) allocationWorks(when string) error {
	a, err := e.Admit("probe", 1)
	if err != nil {
		return fmt.Errorf("%s: %w", when, err)
	}
	e.Pods.Delete(a.Pod)
	e.step("%s, pod %s was allocated %v", when, a.Pod.Name, a.IDs)
	return nil
}

func runSocketDeleted(e *Env) error {
	socket, err := e.PluginSocket()
	if err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		before := harness.Registrations(e.Spec.Resource)
		start := time.Now()
		if err := os.Remove(filepath.Join(mountns.Dir, socket)); err != nil {
			return err
		}
		if err := e.WaitRegistered(before); err != nil {
			return fmt.Errorf("after deleting %s: %w", socket, err)
		}
		e.step("deleted %s (%d/2): plugin re-registered after %v", socket, i, since(start))
		if err := e.allocationWorks("after re-registration"); err != nil {
			return err
		}
		if socket, err = e.PluginSocket(); err != nil {
			return fmt.Errorf("after re-registration: %w", err)
		}
	}
	return nil
}

// runKubeletDrop: the kubelet's device manager disconnects the plugin's
// client, as it does to a client it has just registered when an older
// client's stream of the same resource ends late (the old client's
// goroutine disconnects whichever client is registered by then). The
// resource stays at 0 allocatable until the plugin registers again, which
// only a plugin that notices its stream ended does.
func runKubeletDrop(e *Env) error {
	for i := 1; i <= 2; i++ {
		before := harness.Registrations(e.Spec.Resource)
		start := time.Now()
		e.Kubelet.Manager().GetWatcherHandler().DeRegisterPlugin(e.Spec.Resource, "")
		if err := e.WaitRegistered(before); err != nil {
			return fmt.Errorf("after the kubelet dropped %s (%d/2): %w", e.Spec.Resource, i, err)
		}
		e.step("the kubelet dropped the plugin's client (%d/2): plugin registered again after %v", i, since(start))
		if err := e.allocationWorks("after registering again"); err != nil {
			return err
		}
	}
	return nil
}

func runPluginRestart(e *Env) error {
	for _, crash := range []bool{false, true} {
		how := "SIGTERM"
		if crash {
			how = "SIGKILL"
			e.Plugin.Kill()
		} else if err := e.Plugin.Stop(10 * time.Second); err != nil {
			return fmt.Errorf("on SIGTERM: %w", err)
		}
		unhealthy := e.resourceIs(int64(e.Spec.Devices), 0)
		err := harness.Wait(e.Spec.Timeout, "the kubelet to mark every device unhealthy", func() (bool, string, error) {
			ok, seen := unhealthy()
			return ok, seen, nil
		})
		if err != nil {
			return fmt.Errorf("after %s: %w", how, err)
		}
		e.step("plugin stopped by %s (%s): kubelet keeps capacity %d but allocatable 0", how, e.Plugin.ExitError(), e.Spec.Devices)
		msg, err := e.Reject("orphan", 1)
		if err != nil {
			return fmt.Errorf("after %s: %w", how, err)
		}
		e.step("allocation without the plugin is rejected: %s", msg)
		before := harness.Registrations(e.Spec.Resource)
		start := time.Now()
		if err := e.Plugin.Restart(); err != nil {
			return err
		}
		if err := e.WaitRegistered(before); err != nil {
			return fmt.Errorf("after restarting the plugin (stopped by %s): %w", how, err)
		}
		e.step("plugin restarted (pid %d) and re-registered after %v", e.Plugin.Pid(), since(start))
		if err := e.allocationWorks("after the plugin restart"); err != nil {
			return err
		}
	}
	return nil
}
