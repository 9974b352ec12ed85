package scenario

import (
	"slices"
	"testing"
)

// The profiles' GPUs by NVML index: in the file's order, those bound to
// vfio-pci left out (NVML does not see them).
func TestReadProfileGPUs(t *testing.T) {
	h100, err := readProfileGPUs("../../../../sim/profiles/dgx-h100.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(h100) != 8 || h100[1] != "GPU-9d391317-5af3-50b6-beff-a02793204443" {
		t.Errorf("dgx-h100: %v, want 8 GPUs, GPU-9d391317-... second", h100)
	}
	mixed, err := readProfileGPUs("../../../../sim/profiles/mixed-vfio.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// mixed-vfio is dgx-h100 with GPUs 4-7 on vfio-pci.
	if !slices.Equal(mixed, h100[:4]) {
		t.Errorf("mixed-vfio: %v, want dgx-h100's first four %v", mixed, h100[:4])
	}
	if got := replicaIDs(h100[:1], 2); !slices.Equal(got, []string{h100[0] + "::0", h100[0] + "::1"}) {
		t.Errorf("replicaIDs: %v", got)
	}
	if got := except(h100[:3], h100[1]); !slices.Equal(got, []string{h100[0], h100[2]}) {
		t.Errorf("except: %v", got)
	}
}
