package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"gpulet.dev/test/kubelet/harness"
)

// maxDeviceIDLength is the documented expectation for device IDs.
const maxDeviceIDLength = 63

func runRegister(e *Env) error {
	devs := e.Kubelet.HealthyDevices(e.Spec.Resource)
	var ids []string
	for _, d := range devs {
		ids = append(ids, d.ID)
		if len(d.ID) > maxDeviceIDLength {
			return fmt.Errorf("device ID %q is %d characters; at most %d expected", d.ID, len(d.ID), maxDeviceIDLength)
		}
	}
	e.step("kubelet sees %d healthy devices: %s", len(ids), strings.Join(ids, ", "))
	socket, err := e.PluginSocket()
	if err != nil {
		return err
	}
	e.step("a second ListAndWatch stream on %s lists the same devices", socket)
	c, err := harness.DialPlugin(socket)
	if err != nil {
		return err
	}
	defer c.Close()
	opts, err := c.API.GetDevicePluginOptions(context.Background(), &pluginapi.Empty{})
	if err != nil {
		return fmt.Errorf("GetDevicePluginOptions on %s: %w", socket, err)
	}
	e.step("options: pre_start_required=%v get_preferred_allocation_available=%v",
		opts.PreStartRequired, opts.GetPreferredAllocationAvailable)
	return nil
}

func runAllocate(e *Env) error {
	n := e.Spec.Devices
	first, err := e.Admit("one", 1)
	if err != nil {
		return err
	}
	e.step("pod %s got %v; env %s", first.Pod.Name, first.IDs, envSummary(e, first.Opts))
	var rest *Admitted
	if n > 1 {
		if rest, err = e.Admit("rest", n-1); err != nil {
			return err
		}
		if dup := overlap(first.IDs, rest.IDs); len(dup) > 0 {
			return fmt.Errorf("pods %s and %s were both given %v", first.Pod.Name, rest.Pod.Name, dup)
		}
		e.step("pod %s got the other %d devices %v", rest.Pod.Name, n-1, rest.IDs)
	}
	msg, err := e.Reject("too-many", 1)
	if err != nil {
		return err
	}
	e.step("with every device in use, a pod asking for 1 more is rejected: %s", msg)
	e.Pods.Delete(first.Pod)
	again, err := e.Admit("again", 1)
	if err != nil {
		return fmt.Errorf("after deleting pod %s: %w", first.Pod.Name, err)
	}
	if !slices.Equal(again.IDs, first.IDs) {
		return fmt.Errorf("after deleting pod %s (devices %v), pod %s got %v instead of the freed devices",
			first.Pod.Name, first.IDs, again.Pod.Name, again.IDs)
	}
	e.step("after deleting %s, pod %s got its freed device %v", first.Pod.Name, again.Pod.Name, again.IDs)
	if rest != nil {
		return e.checkStable(rest)
	}
	return nil
}

// checkStable asks for a running container's options again, as the kubelet
// does when it restarts the container: the answer must not change.
func (e *Env) checkStable(a *Admitted) error {
	all, err := e.Kubelet.RunOptions(a.Pod)
	if err != nil {
		return err
	}
	if got, want := all["main"].String(), a.Opts.String(); got != want {
		return fmt.Errorf("run options of pod %s changed:\nbefore:\n%safter:\n%s", a.Pod.Name, want, got)
	}
	e.step("pod %s gets the same run options when its container restarts", a.Pod.Name)
	return nil
}

func envSummary(e *Env, o *harness.RunOptions) string {
	if e.Spec.EnvName == "" {
		return "(not checked)"
	}
	return e.Spec.EnvName + "=" + o.Envs[e.Spec.EnvName]
}

func runPreferred(e *Env) error {
	socket, err := e.PluginSocket()
	if err != nil {
		return err
	}
	c, err := harness.DialPlugin(socket)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	opts, err := c.API.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil {
		return fmt.Errorf("GetDevicePluginOptions: %w", err)
	}
	if !opts.GetPreferredAllocationAvailable {
		return skipf("the plugin does not offer GetPreferredAllocation")
	}
	var all []string
	for _, d := range e.Kubelet.HealthyDevices(e.Spec.Resource) {
		all = append(all, d.ID)
	}
	size := min(2, len(all))
	must := all[len(all)-1:]
	got, err := preferred(ctx, c, all, must, size)
	if err != nil {
		return err
	}
	e.step("asked for %d of %d devices including %v: plugin prefers %v", size, len(all), must, got)
	want, err := preferred(ctx, c, all, nil, size)
	if err != nil {
		return err
	}
	a, err := e.Admit("preferred", size)
	if err != nil {
		return err
	}
	if !slices.Equal(a.IDs, slices.Sorted(slices.Values(want))) {
		return fmt.Errorf("plugin prefers %v for %d devices, but the kubelet allocated %v", want, size, a.IDs)
	}
	e.step("the kubelet allocated the plugin's preference %v to pod %s", a.IDs, a.Pod.Name)
	return nil
}

// preferred calls GetPreferredAllocation and checks the answer is usable.
func preferred(ctx context.Context, c *harness.PluginClient, available, must []string, size int) ([]string, error) {
	resp, err := c.API.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs: available, MustIncludeDeviceIDs: must, AllocationSize: int32(size),
		}},
	})
	what := fmt.Sprintf("GetPreferredAllocation(available=%v, must_include=%v, size=%d)", available, must, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(resp.ContainerResponses) != 1 {
		return nil, fmt.Errorf("%s returned %d container responses, want 1", what, len(resp.ContainerResponses))
	}
	ids := resp.ContainerResponses[0].DeviceIDs
	switch {
	case len(ids) != size:
		return nil, fmt.Errorf("%s returned %d devices %v, want %d", what, len(ids), ids, size)
	case len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids):
		return nil, fmt.Errorf("%s returned duplicates: %v", what, ids)
	}
	for _, id := range ids {
		if !slices.Contains(available, id) {
			return nil, fmt.Errorf("%s returned %s, which is not available", what, id)
		}
	}
	for _, id := range must {
		if !slices.Contains(ids, id) {
			return nil, fmt.Errorf("%s left out must-include device %s: %v", what, id, ids)
		}
	}
	return ids, nil
}
