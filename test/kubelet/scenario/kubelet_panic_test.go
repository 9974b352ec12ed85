package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpulet.dev/test/kubelet/harness"
)

// The kubelet's own device manager (Kubernetes v1.36) panics when a device
// it chose leaves the plugin's list while its Allocate call is in flight, as
// a reload to fewer replicas can do at any moment. The soak meets that
// under chaos: the harness must return the panic as a PanicError (not die
// with it), and a kubelet restarted after it, as a crashed kubelet is, must
// serve the plugin again. If a future Kubernetes fixes the panic, this test
// says so, and the soak's handling of it can go.
func TestDeviceManagerPanicIsReturnedAndARestartedKubeletWorks(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "answer-allocate")
	spec := fakeSpec(t, "-drop-on-allocate-until="+gate)
	sc := Scenario{Name: "kubelet-panic", Run: func(e *Env) error {
		pod := harness.NewPod("victim", e.Spec.Resource, 1)
		done := make(chan error, 1)
		go func() {
			_, err := e.Kubelet.Admit(pod)
			done <- err
		}()
		// The fake took the chosen device out of its list and holds its
		// answer until the kubelet has taken the new list.
		fewer := e.resourceIs(int64(e.Spec.Devices-1), int64(e.Spec.Devices-1))
		if err := e.wait("the kubelet to drop the device being allocated", fewer); err != nil {
			return err
		}
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			return err
		}
		err := <-done
		var panicked *harness.PanicError
		if !errors.As(err, &panicked) {
			return fmt.Errorf("admission returned %v; want the device manager's panic "+
				"(fixed upstream? then the soak's handling of it can go)", err)
		}
		if !strings.Contains(panicked.Stack, "allocateContainerResources") {
			return fmt.Errorf("the panic is not the known one in allocateContainerResources:\n%s", panicked.Stack)
		}
		e.step("admission panicked in the kubelet's code: %v", panicked.Value)
		// As the soak does: the crashed kubelet starts again; the fake lists
		// every device again (SIGUSR2).
		before := harness.Registrations(e.Spec.Resource)
		if err := e.RestartKubelet(); err != nil {
			return err
		}
		if err := e.Hook(e.Spec.RecoverCmd); err != nil {
			return err
		}
		if err := os.Remove(gate); err != nil {
			return err
		}
		if err := e.WaitRegistered(before); err != nil {
			return fmt.Errorf("after restarting the kubelet: %w", err)
		}
		return nil
	}}
	if err := Run(spec, sc, t); err != nil {
		t.Fatal(err)
	}
}
