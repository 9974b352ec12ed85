package node

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestProfileMinorsAreTheYAMLs(t *testing.T) {
	for _, c := range []struct {
		machine string
		want    map[string]int
	}{
		// Minors in probe order, not NVML's bus order; 7 is unused.
		{"dgx-h100", map[string]int{
			"gpu-9605369a-4cef-521f-904b-cafb54df34d0": 2,
			"gpu-9d391317-5af3-50b6-beff-a02793204443": 3,
			"gpu-f0721ffb-e66f-52de-a86e-1c9b040c372a": 0,
			"gpu-a247cf48-492c-51cb-8f9d-afdf8da01c25": 1,
			"gpu-cccd02ab-8116-568f-884a-21353f0a0a66": 6,
			"gpu-5e3a5380-1a96-5e70-ab29-387692334a60": 8,
			"gpu-4e2715e4-ebc8-5c76-9654-d23b8fe77138": 4,
			"gpu-a5b17024-e9e5-5422-b1c3-d471ebf556ac": 5,
		}},
		{"a100-mig", map[string]int{
			"gpu-81522b7c-0696-540e-9229-21505149f9a1": 2,
			"gpu-d8c16c85-4ebf-5ad7-897d-da74759e0946": 0,
			"gpu-b5693fc3-184f-5903-8408-1cf65f944e4d": 4,
			"gpu-7686041d-dbe9-5c49-b4fb-b61b57525544": 1,
		}},
		// GPUs 4-7 are on vfio-pci: no minor.
		{"mixed-vfio", map[string]int{
			"gpu-9605369a-4cef-521f-904b-cafb54df34d0": 0,
			"gpu-9d391317-5af3-50b6-beff-a02793204443": 1,
			"gpu-f0721ffb-e66f-52de-a86e-1c9b040c372a": 2,
			"gpu-a247cf48-492c-51cb-8f9d-afdf8da01c25": 3,
		}},
	} {
		got, err := profileMinors(sourceDir(t), c.machine)
		if err != nil {
			t.Fatalf("%s: %v", c.machine, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: minors %v, want %v", c.machine, got, c.want)
		}
	}
	def, err := profileMinors(sourceDir(t), "")
	if err != nil || def["gpu-9605369a-4cef-521f-904b-cafb54df34d0"] != 2 {
		t.Errorf("the default machine: %v, %v; want dgx-h100's minors", def, err)
	}
}

func TestProfileMinorsOfAMachineFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "m.yaml")
	text := "gpus:\n" +
		"  - {uuid: GPU-00000000-0000-4000-8000-000000000001, busId: \"0000:07:00.0\", minor: 5}\n" +
		"  - {uuid: GPU-00000000-0000-4000-8000-000000000002, busId: \"0000:08:00.0\"}\n"
	if err := os.WriteFile(file, []byte(text), 0644); err != nil {
		t.Fatal(err)
	}
	_, err := profileMinors("/nonexistent", file)
	if err == nil || !strings.Contains(err.Error(), "gpus[1] (GPU-00000000-0000-4000-8000-000000000002) has no minor") {
		t.Errorf("a GPU without minor: %v", err)
	}
	if _, err := profileMinors(sourceDir(t), "no-such-profile"); err == nil {
		t.Errorf("an unknown profile was read")
	}
}

func TestTakeMinorsChecksGpuletAgainstTheYAML(t *testing.T) {
	machine := func(minors ...int) *simMachine {
		m := &simMachine{}
		m.GPUs = make([]simGPU, len(minors))
		for i, minor := range minors {
			m.GPUs[i].Index = i
			m.GPUs[i].UUID = []string{"GPU-A", "GPU-B"}[i]
			m.GPUs[i].Minor = minor
		}
		return m
	}
	want := map[string]int{"gpu-a": 2, "gpu-b": 0}
	if err := machine(2, 0).takeMinors(want); err != nil {
		t.Errorf("agreeing minors: %v", err)
	}
	// gpulet taking the index for the minor.
	err := machine(0, 1).takeMinors(want)
	if err == nil || !strings.Contains(err.Error(), "GPU 0 (GPU-A) has minor 0, the machine's YAML says 2") ||
		!strings.Contains(err.Error(), "GPU 1 (GPU-B) has minor 1, the machine's YAML says 0") {
		t.Errorf("index for minor: %v", err)
	}
	if err := machine(2).takeMinors(want); err == nil || !strings.Contains(err.Error(), "gpu-b of the machine's YAML is missing") {
		t.Errorf("a GPU gpulet does not list: %v", err)
	}
	if err := machine(2, 0).takeMinors(map[string]int{"gpu-a": 2}); err == nil || !strings.Contains(err.Error(), "GPU 1 (GPU-B) is not a GPU") {
		t.Errorf("a GPU the YAML does not list: %v", err)
	}
}
