// Package fakeplugin is a small device plugin used to prove the harness before
// gpulet's own plugin exists, and to show in `demo` what a plugin conversation
// looks like. It advertises Config.Devices devices of Config.Resource, answers
// Allocate with an environment variable listing the IDs (plus one device node,
// one annotation and one CDI name per device, so every response field is
// exercised), implements GetPreferredAllocation (same NUMA node first), and
// re-registers when the kubelet restarts or its socket disappears.
//
// SIGUSR1 marks the first healthy device unhealthy, SIGUSR2 marks all devices
// healthy again; both are pushed to every ListAndWatch stream.
package fakeplugin

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// service implements the DevicePlugin gRPC service. Safe for concurrent use.
type service struct {
	pluginapi.UnimplementedDevicePluginServer
	cfg Config

	mu      sync.Mutex
	devices []*pluginapi.Device // guarded by mu; replaced, never mutated
	changed chan struct{}       // guarded by mu; closed and replaced on every change
}

func newService(cfg Config) *service {
	return &service{cfg: cfg, changed: make(chan struct{}), devices: allDevices(cfg)}
}

// allDevices is every device of cfg, healthy.
func allDevices(cfg Config) []*pluginapi.Device {
	var devs []*pluginapi.Device
	for i := 0; i < cfg.Devices; i++ {
		dev := &pluginapi.Device{ID: DeviceID(i), Health: pluginapi.Healthy}
		if cfg.NUMANodes > 0 {
			node := int64(i * cfg.NUMANodes / cfg.Devices)
			dev.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: node}}}
		}
		devs = append(devs, dev)
	}
	return devs
}

// DeviceID is the ID the fake plugin gives its i-th device.
func DeviceID(i int) string { return fmt.Sprintf("fake-gpu-%d", i) }

func (s *service) snapshot() ([]*pluginapi.Device, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.devices, s.changed
}

// setHealth applies f to a copy of the device list and wakes every watcher.
func (s *service) setHealth(f func(devs []*pluginapi.Device)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	devs := make([]*pluginapi.Device, len(s.devices))
	for i, d := range s.devices {
		devs[i] = &pluginapi.Device{ID: d.ID, Health: d.Health, Topology: d.Topology}
	}
	f(devs)
	s.devices = devs
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *service) breakOne() {
	s.setHealth(func(devs []*pluginapi.Device) {
		for _, d := range devs {
			if d.Health == pluginapi.Healthy {
				d.Health = pluginapi.Unhealthy
				return
			}
		}
	})
}

// healAll makes every device healthy and lists again any device Allocate
// took out (-drop-on-allocate-until).
func (s *service) healAll() {
	full := allDevices(s.cfg)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.devices = full
	close(s.changed)
	s.changed = make(chan struct{})
}

// dropUntil takes ids out of the advertised list, then waits until the
// file at path exists or ctx ends.
func (s *service) dropUntil(ctx context.Context, ids []string, path string) error {
	s.mu.Lock()
	var kept []*pluginapi.Device
	for _, d := range s.devices {
		if !slices.Contains(ids, d.ID) {
			kept = append(kept, d)
		}
	}
	s.devices = kept
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-tick.C:
		}
	}
}

func (s *service) options() *pluginapi.DevicePluginOptions {
	return &pluginapi.DevicePluginOptions{
		PreStartRequired:                s.cfg.PreStart,
		GetPreferredAllocationAvailable: true,
	}
}

func (s *service) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return s.options(), nil
}

func (s *service) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	for {
		devs, changed := s.snapshot()
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-stream.Context().Done():
			return nil
		}
	}
}

// numaOf returns the NUMA node of a device, or -1 when unknown.
func (s *service) numaOf(id string) int64 {
	devs, _ := s.snapshot()
	for _, d := range devs {
		if d.ID == id && d.Topology != nil && len(d.Topology.Nodes) > 0 {
			return d.Topology.Nodes[0].ID
		}
	}
	return -1
}

func (s *service) known(id string) bool {
	devs, _ := s.snapshot()
	return slices.ContainsFunc(devs, func(d *pluginapi.Device) bool { return d.ID == id })
}

func (s *service) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, creq := range req.ContainerRequests {
		for _, id := range append(slices.Clone(creq.AvailableDeviceIDs), creq.MustIncludeDeviceIDs...) {
			if !s.known(id) {
				return nil, status.Errorf(codes.InvalidArgument, "invalid request: unknown device: %s", id)
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses,
			&pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: s.prefer(creq)})
	}
	return resp, nil
}

// prefer keeps the must-include devices and fills up with available devices
// on the NUMA node of the first chosen one, then by ID.
func (s *service) prefer(creq *pluginapi.ContainerPreferredAllocationRequest) []string {
	chosen := slices.Clone(creq.MustIncludeDeviceIDs)
	rest := slices.DeleteFunc(slices.Clone(creq.AvailableDeviceIDs), func(id string) bool {
		return slices.Contains(chosen, id)
	})
	home := int64(-1)
	if len(chosen) > 0 {
		home = s.numaOf(chosen[0])
	} else if len(rest) > 0 {
		sort.Strings(rest)
		home = s.numaOf(rest[0])
	}
	sort.SliceStable(rest, func(i, j int) bool {
		hi, hj := s.numaOf(rest[i]) == home, s.numaOf(rest[j]) == home
		if hi != hj {
			return hi
		}
		return rest[i] < rest[j]
	})
	for _, id := range rest {
		if len(chosen) >= int(creq.AllocationSize) {
			break
		}
		chosen = append(chosen, id)
	}
	return chosen
}

func (s *service) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, creq := range req.ContainerRequests {
		cresp := &pluginapi.ContainerAllocateResponse{
			Envs:        map[string]string{},
			Annotations: map[string]string{},
		}
		for _, id := range creq.DevicesIds {
			if !s.known(id) {
				return nil, status.Errorf(codes.InvalidArgument, "invalid request: unknown device: %s", id)
			}
			cresp.Devices = append(cresp.Devices, &pluginapi.DeviceSpec{
				ContainerPath: "/dev/" + id, HostPath: "/dev/null", Permissions: "rw",
			})
			cresp.CdiDevices = append(cresp.CdiDevices, &pluginapi.CDIDevice{Name: s.cfg.Resource + "=" + id})
		}
		ids := strings.Join(creq.DevicesIds, ",")
		cresp.Envs[s.cfg.EnvName] = ids
		cresp.Annotations["example.com/fake-plugin-devices"] = ids
		resp.ContainerResponses = append(resp.ContainerResponses, cresp)
	}
	if s.cfg.DropOnAllocateUntil != "" {
		// The answer is for the devices the kubelet chose, which the list
		// no longer has when it arrives.
		var ids []string
		for _, creq := range req.ContainerRequests {
			ids = append(ids, creq.DevicesIds...)
		}
		if err := s.dropUntil(ctx, ids, s.cfg.DropOnAllocateUntil); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

func (s *service) PreStartContainer(_ context.Context, req *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	for _, id := range req.DevicesIds {
		if !s.known(id) {
			return nil, status.Errorf(codes.InvalidArgument, "invalid request: unknown device: %s", id)
		}
	}
	return &pluginapi.PreStartContainerResponse{}, nil
}
