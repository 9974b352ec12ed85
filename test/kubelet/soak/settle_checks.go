package soak

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"gpulet.dev/test/kubelet/harness"
)

// oneReplicaError is gpulet's (and NVIDIA's) refusal under
// failRequestsGreaterThanOne (docs/resources.md), for a request of two.
const oneReplicaError = "invalid request: maximum request size for shared resources is 1; found 2"

// checkReplicaLimit admits a pod asking for two devices of a time-sliced
// resource, if two are free: under failRequestsGreaterThanOne the kubelet
// must refuse it with gpulet's documented error, otherwise admit it.
func (r *machineRun) checkReplicaLimit(v Variant, res string) error {
	if len(r.node.freeIDs(res)) < 2 {
		r.stats.add("two-replica checks skipped (fewer than 2 free)", 1)
		return nil
	}
	h, err := r.node.admit("two-replicas", res, 2, false, r.elapsed())
	return r.judgeReplicaLimit(v, res, h, err)
}

// judgeReplicaLimit judges the admission of a two-replica pod (h, err).
func (r *machineRun) judgeReplicaLimit(v Variant, res string, h *heldPod, err error) error {
	if h != nil {
		r.node.free(h)
	}
	if IsViolation(err) {
		return err
	}
	if verdict := replicaLimitVerdict(v.OneReplica, err); verdict != "" {
		return violation("%s under %q: %s", res, v.Name, verdict)
	}
	if v.OneReplica {
		r.stats.add("two-replica pods refused (failRequestsGreaterThanOne)", 1)
	} else {
		r.stats.add("two-replica pods admitted", 1)
	}
	return nil
}

// replicaLimitVerdict: "" when the outcome of admitting two replicas is
// the one failRequestsGreaterThanOne (oneReplica) demands.
func replicaLimitVerdict(oneReplica bool, err error) string {
	switch {
	case oneReplica && err == nil:
		return "failRequestsGreaterThanOne is on and a pod asking for 2 replicas was admitted"
	case oneReplica && !strings.Contains(err.Error(), oneReplicaError):
		return "failRequestsGreaterThanOne is on and a pod asking for 2 replicas was refused with another error than \"" +
			oneReplicaError + "\": " + err.Error()
	case !oneReplica && err != nil:
		return "failRequestsGreaterThanOne is off, 2 replicas are free, and a pod asking for 2 was refused: " + err.Error()
	}
	return ""
}

// checkAllocationsOnGpulet asks gpulet itself (Allocate on its socket, as
// the kubelet would after losing its checkpoint) for the devices of every
// running pod whose IDs the configuration still advertises: it must name
// the same devices as at the pod's admission. The kubelet's checkpoint
// alone would not show gpulet mapping an ID to another device after a
// restart.
func (r *machineRun) checkAllocationsOnGpulet(v Variant) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, res := range r.machine.Resources() {
		want := r.inv.expected[v.Name][res]
		var pods []*heldPod
		for _, h := range r.node.heldPods(res) {
			if subset(h.IDs, want) && !(v.OneReplica && v.Shared[res] && len(h.IDs) > 1) {
				pods = append(pods, h)
			}
		}
		if len(pods) == 0 {
			continue
		}
		socket, err := harness.FindPluginSocket(ctx, want)
		if err != nil {
			return violation("%s: %v", res, err)
		}
		c, err := harness.DialPlugin(socket)
		if err != nil {
			return err
		}
		err = r.allocateHeld(ctx, c, pods)
		c.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *machineRun) allocateHeld(ctx context.Context, c *harness.PluginClient, pods []*heldPod) error {
	for _, h := range pods {
		resp, err := c.API.Allocate(ctx, &pluginapi.AllocateRequest{
			ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: h.IDs}},
		})
		if err != nil {
			if s, ok := status.FromError(err); ok {
				err = errors.New(s.Message())
			}
			return violation("pod %s holds %s %v; gpulet refuses them at a direct Allocate: %v", h.Pod.Name, h.Resource, h.IDs, err)
		}
		got := splitVisible(resp.ContainerResponses[0].Envs[visibleDevices])
		if !slices.Equal(got, h.Visible) {
			return violation("pod %s was admitted with %s %v (%s=%v); gpulet now answers them with %v",
				h.Pod.Name, h.Resource, h.IDs, visibleDevices, h.Visible, got)
		}
		r.stats.add("allocations re-checked on gpulet", 1)
	}
	return nil
}
