package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"gpulet.dev/test/kubelet/harness"
)

// unknownID is a device ID no plugin advertises.
const unknownID = "no-such-device-kubelet-harness"

func runBadRequests(e *Env) error {
	socket, err := e.PluginSocket()
	if err != nil {
		return err
	}
	c, err := harness.DialPlugin(socket)
	if err != nil {
		return err
	}
	defer c.Close()
	valid := e.Kubelet.HealthyDevices(e.Spec.Resource)[0].ID
	for _, ids := range [][]string{{unknownID}, {valid, unknownID + "-2"}} {
		bad := ids[len(ids)-1]
		_, err := c.API.Allocate(context.Background(), &pluginapi.AllocateRequest{
			ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}},
		})
		if err := expectInvalid(err, bad); err != nil {
			return fmt.Errorf("Allocate(%v) directly on %s: %w", ids, socket, err)
		}
		e.step("Allocate(%v) -> %s: %s", ids, status.Code(err), status.Convert(err).Message())
	}
	return e.allocationWorks("after the bad requests")
}

func expectInvalid(err error, id string) error {
	if err == nil {
		return fmt.Errorf("succeeded; want INVALID_ARGUMENT naming %s", id)
	}
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		return fmt.Errorf("failed with %s (%q); want INVALID_ARGUMENT", st.Code(), st.Message())
	}
	if !strings.Contains(st.Message(), id) {
		return fmt.Errorf("INVALID_ARGUMENT message %q does not name the unknown device %s", st.Message(), id)
	}
	return nil
}

func runHealth(e *Env) error {
	if e.Spec.FaultCmd == "" {
		return skipf("no fault command given (Spec.FaultCmd / --fault-cmd)")
	}
	n, bad := int64(e.Spec.Devices), int64(e.Spec.FaultDevices)
	before := healthyIDs(e)
	for _, id := range e.Spec.FaultIDs {
		if !slices.Contains(before, id) {
			return fmt.Errorf("device %s, which the fault is to make unhealthy, is not among the kubelet's healthy devices %v", id, before)
		}
	}
	if err := e.Hook(e.Spec.FaultCmd); err != nil {
		return err
	}
	what, sick := fmt.Sprintf("%d device(s) to turn unhealthy", bad), e.resourceIs(n, n-bad)
	if len(e.Spec.FaultIDs) > 0 {
		what = fmt.Sprintf("exactly %v to turn unhealthy, every other device staying healthy", e.Spec.FaultIDs)
		sick = allOf(sick, e.healthyAre(before, without(before, e.Spec.FaultIDs)))
	}
	if err := e.wait(what, sick); err != nil {
		return fmt.Errorf("after %q: %w", e.Spec.FaultCmd, err)
	}
	e.step("after %q the kubelet shows capacity %d, allocatable %d; unhealthy: %v",
		e.Spec.FaultCmd, n, n-bad, missing(before, healthyIDs(e)))
	if bad > 0 {
		msg, err := e.Reject("needs-all", e.Spec.Devices)
		if err != nil {
			return err
		}
		e.step("a pod asking for all %d devices is rejected: %s", n, msg)
	}
	if e.Spec.RecoverCmd == "" {
		return nil
	}
	if err := e.Hook(e.Spec.RecoverCmd); err != nil {
		return err
	}
	if err := e.wait("every device to be healthy again", allOf(e.resourceIs(n, n), e.healthyAre(before, before))); err != nil {
		return fmt.Errorf("after %q: %w", e.Spec.RecoverCmd, err)
	}
	e.step("after %q every device is healthy again", e.Spec.RecoverCmd)
	return nil
}

// healthyAre reports whether the kubelet's healthy devices of the resource
// are exactly want; what it sees names the devices of all (the healthy
// ones before the fault) that are not healthy, and any it did not expect.
func (e *Env) healthyAre(all, want []string) func() (bool, string) {
	return func() (bool, string) {
		now := healthyIDs(e)
		seen := fmt.Sprintf("unhealthy or gone: %v", missing(all, now))
		if extra := missing(now, want); len(extra) > 0 {
			seen += fmt.Sprintf("; healthy but expected not to be: %v", extra)
		}
		return slices.Equal(now, sortedCopy(want)), seen
	}
}

// allOf holds when every condition does; it reports what each saw.
func allOf(conds ...func() (bool, string)) func() (bool, string) {
	return func() (bool, string) {
		ok, seen := true, []string{}
		for _, c := range conds {
			o, s := c()
			ok = ok && o
			seen = append(seen, s)
		}
		return ok, strings.Join(seen, "; ")
	}
}

func healthyIDs(e *Env) []string {
	var ids []string
	for _, d := range e.Kubelet.HealthyDevices(e.Spec.Resource) {
		ids = append(ids, d.ID)
	}
	return ids
}

// missing returns the IDs of before that are not in after.
func missing(before, after []string) []string {
	var out []string
	for _, id := range before {
		if !slices.Contains(after, id) {
			out = append(out, id)
		}
	}
	return out
}

// without returns all but the IDs of drop.
func without(all, drop []string) []string { return missing(all, drop) }

func sortedCopy(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
