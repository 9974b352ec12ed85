package soak

import (
	"context"
	"math/rand"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"gpulet.dev/test/kubelet/harness"
	"gpulet.dev/test/kubelet/internal/mountns"
)

// directClient calls gpulet's plugin sockets itself, beside the kubelet, so
// GetPreferredAllocation and Allocate run concurrently with the kubelet's
// (which admits one pod at a time), with ListAndWatch, reloads and health
// changes. These calls allocate nothing in the kubelet; an answer must only
// be well formed: an Allocate that succeeds lists exactly the devices asked
// for. Errors (a device gone after a reload, the server restarting) are
// counted by code.
func (r *machineRun) directClient(rng *rand.Rand) {
	for r.pause(time.Duration(50+rng.Intn(200)) * time.Millisecond) {
		r.gate.RLock()
		err := r.directCall(rng)
		r.gate.RUnlock()
		if err != nil {
			r.fail(err)
			return
		}
	}
}

func (r *machineRun) directCall(rng *rand.Rand) error {
	entries, err := os.ReadDir(mountns.Dir)
	if err != nil {
		return err
	}
	var sockets []string
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 && e.Name() != "kubelet.sock" {
			sockets = append(sockets, e.Name())
		}
	}
	if len(sockets) == 0 {
		r.stats.add("direct calls: no plugin socket", 1)
		return nil
	}
	c, err := harness.DialPlugin(sockets[rng.Intn(len(sockets))])
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	devs, err := c.FirstList(ctx)
	if err != nil {
		r.stats.add("direct calls failed: "+status.Code(err).String(), 1)
		return nil
	}
	var healthy []string
	for _, d := range devs {
		if d.Health == pluginapi.Healthy {
			healthy = append(healthy, d.ID)
		}
	}
	if len(healthy) == 0 {
		return nil
	}
	n := 1 + rng.Intn(min(2, len(healthy)))
	pref, err := c.API.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs: healthy, AllocationSize: int32(n),
		}},
	})
	if err != nil {
		r.stats.add("direct calls failed: "+status.Code(err).String(), 1)
	} else if got := pref.ContainerResponses[0].DeviceIDs; len(got) != n || !subset(got, healthy) {
		return violation("GetPreferredAllocation(size %d of %d available) answered %v", n, len(healthy), got)
	}
	ids := make([]string, 0, n)
	for _, i := range rng.Perm(len(healthy))[:n] {
		ids = append(ids, healthy[i])
	}
	resp, err := c.API.Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}},
	})
	if err != nil {
		r.stats.add("direct calls failed: "+status.Code(err).String(), 1)
		return nil
	}
	r.stats.add("direct calls answered", 1)
	got := splitVisible(resp.ContainerResponses[0].Envs[visibleDevices])
	want, err := r.node.inv.visible(ids)
	if err != nil {
		return violation("gpulet's ListAndWatch on %s lists %v: %v", c.Socket, ids, err)
	}
	if !slices.Equal(got, want) {
		return violation("Allocate(%v) directly on %s answered %s=%q (want %s)",
			ids, c.Socket, visibleDevices, resp.ContainerResponses[0].Envs[visibleDevices], strings.Join(want, ","))
	}
	return nil
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
