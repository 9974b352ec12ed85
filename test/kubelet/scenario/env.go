package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"gpulet.dev/test/kubelet/harness"
)

// Reporter receives one line per step; *testing.T satisfies it.
type Reporter interface {
	Logf(format string, args ...any)
}

// Env is what a scenario works with: a running kubelet device manager and
// plugin process, already registered.
type Env struct {
	Spec    Spec
	Pods    *harness.Pods
	Kubelet *harness.Kubelet
	Plugin  *harness.PluginProcess

	report     Reporter
	kubeletLog *harness.LogBuffer
	podSeq     int
}

// Run starts a fresh kubelet and plugin, waits for registration, runs sc and
// tears both down. The error names the failed check and ends with the last
// lines of the plugin's output and of the kubelet's log.
func Run(spec Spec, sc Scenario, r Reporter) error {
	spec = spec.withDefaults()
	if err := spec.validate(); err != nil {
		return err
	}
	e := &Env{Spec: spec, Pods: harness.NewPods(), report: r}
	err := e.setUp()
	if err == nil {
		err = sc.Run(e)
	}
	if err != nil && !errors.Is(err, ErrSkipped) {
		err = e.withLogs(err) // before tear-down adds its own noise
	}
	if tearErr := e.tearDown(); err == nil {
		err = tearErr
	}
	return err
}

func (e *Env) setUp() error {
	e.kubeletLog = harness.KubeletLog(e.Spec.KubeletLogLevel, e.Spec.Verbose)
	e.kubeletLog.Reset()
	if err := harness.ResetDir(); err != nil {
		return err
	}
	k, err := harness.StartKubelet(e.Pods, e.Spec.NUMANodes)
	if err != nil {
		return err
	}
	e.Kubelet = k
	e.step("kubelet device manager (Kubernetes %s) is serving kubelet.sock", harness.KubernetesVersion())
	before := harness.Registrations(e.Spec.Resource)
	start := time.Now()
	e.Plugin, err = harness.StartPlugin(e.Spec.PluginArgv, e.Spec.PluginEnv, e.Spec.Verbose)
	if err != nil {
		return err
	}
	e.step("started plugin (pid %d): %s", e.Plugin.Pid(), strings.Join(e.Spec.PluginArgv, " "))
	if err := e.WaitRegistered(before); err != nil {
		return err
	}
	e.step("plugin registered %s with %d devices after %v", e.Spec.Resource, e.Spec.Devices, since(start))
	return nil
}

func (e *Env) tearDown() error {
	var err error
	if e.Plugin != nil && e.Plugin.Running() {
		if stopErr := e.Plugin.Stop(10 * time.Second); stopErr != nil {
			err = fmt.Errorf("plugin did not shut down cleanly: %w", stopErr)
		}
	}
	if e.Kubelet != nil {
		if stopErr := e.Kubelet.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the device manager: %w", stopErr)
		}
	}
	return err
}

func (e *Env) withLogs(err error) error {
	msg := err.Error() + "\n"
	if e.Plugin != nil {
		if !e.Plugin.Running() {
			msg += "  plugin process: " + e.Plugin.ExitError() + "\n"
		}
		if tail := e.Plugin.Output.Tail(30); tail != "" {
			msg += "  plugin output (last lines):\n" + tail
		}
	}
	if e.kubeletLog != nil {
		if tail := e.kubeletLog.Tail(30); tail != "" {
			msg += "  kubelet log (last lines):\n" + tail
		}
	}
	return errors.New(strings.TrimRight(msg, "\n"))
}

func (e *Env) step(format string, args ...any) {
	if h, ok := e.report.(interface{ Helper() }); ok {
		h.Helper()
	}
	if e.report != nil {
		e.report.Logf("  - "+format, args...)
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// wait is harness.Wait with the spec's timeout, failing fast if the plugin
// exits while it is expected to run.
func (e *Env) wait(what string, cond func() (bool, string)) error {
	return harness.Wait(e.Spec.Timeout, what, func() (bool, string, error) {
		if e.Plugin != nil && !e.Plugin.Running() {
			return false, "", fmt.Errorf("plugin process ended: %s", e.Plugin.ExitError())
		}
		ok, seen := cond()
		return ok, seen, nil
	})
}

// resourceIs reports whether the kubelet shows capacity/allocatable for the resource.
func (e *Env) resourceIs(capacity, allocatable int64) func() (bool, string) {
	return func() (bool, string) {
		r, ok := e.Kubelet.Resources()[e.Spec.Resource]
		if !ok {
			return false, fmt.Sprintf("%s not in the node's resources %v", e.Spec.Resource, e.Kubelet.Resources())
		}
		seen := fmt.Sprintf("capacity %d, allocatable %d", r.Capacity, r.Allocatable)
		return r.Capacity == capacity && r.Allocatable == allocatable, seen
	}
}

// WaitRegistered waits for a Register call after the count `before` and for
// every device to be healthy in the kubelet.
func (e *Env) WaitRegistered(before float64) error {
	full := e.resourceIs(int64(e.Spec.Devices), int64(e.Spec.Devices))
	what := fmt.Sprintf("the plugin to register %s with %d healthy devices", e.Spec.Resource, e.Spec.Devices)
	return e.wait(what, func() (bool, string) {
		n := harness.Registrations(e.Spec.Resource)
		if n <= before {
			return false, fmt.Sprintf("no Register call for %s yet (kubelet has received %v in total)", e.Spec.Resource, n)
		}
		return full()
	})
}

// RestartKubelet stops the device manager and starts a new one, as a kubelet restart does.
func (e *Env) RestartKubelet() error {
	k, err := e.Kubelet.Restart()
	if err != nil {
		return err
	}
	e.Kubelet = k
	return nil
}

// PluginSocket finds the plugin's socket by the devices it serves.
func (e *Env) PluginSocket() (string, error) {
	var ids []string
	for _, d := range e.Kubelet.HealthyDevices(e.Spec.Resource) {
		ids = append(ids, d.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.Spec.Timeout)
	defer cancel()
	return harness.FindPluginSocket(ctx, ids)
}

// Hook runs a FaultCmd/RecoverCmd with PLUGIN_PID set.
func (e *Env) Hook(cmdline string) error {
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Env = append(os.Environ(), e.Spec.PluginEnv...)
	cmd.Env = append(cmd.Env, "PLUGIN_PID="+strconv.Itoa(e.Plugin.Pid()))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("command %q failed: %v; output: %s", cmdline, err, strings.TrimSpace(string(out)))
	}
	return nil
}
