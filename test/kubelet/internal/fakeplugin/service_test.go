package fakeplugin

import (
	"slices"
	"testing"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

func TestPreferKeepsMustIncludeAndStaysOnItsNUMANode(t *testing.T) {
	cfg := DefaultConfig() // 4 devices: 0,1 on NUMA 0; 2,3 on NUMA 1
	s := newService(cfg)
	all := []string{DeviceID(0), DeviceID(1), DeviceID(2), DeviceID(3)}
	cases := []struct {
		must []string
		size int32
		want []string
	}{
		{nil, 2, []string{DeviceID(0), DeviceID(1)}},
		{[]string{DeviceID(3)}, 2, []string{DeviceID(3), DeviceID(2)}},
		{[]string{DeviceID(1)}, 3, []string{DeviceID(1), DeviceID(0), DeviceID(2)}},
		{nil, 4, all},
	}
	for _, tc := range cases {
		got := s.prefer(&pluginapi.ContainerPreferredAllocationRequest{
			AvailableDeviceIDs: all, MustIncludeDeviceIDs: tc.must, AllocationSize: tc.size,
		})
		if !slices.Equal(got, tc.want) {
			t.Errorf("prefer(must=%v, size=%d) = %v, want %v", tc.must, tc.size, got, tc.want)
		}
	}
}
