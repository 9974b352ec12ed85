package node

// What the fixture needs to know about the simulated machine: what gpulet
// reports (`gpulet devices --json`), except each GPU's minor, which is read
// from the machine's YAML (the profile the node is rendered from) so that the
// scenarios' expected /dev/nvidia<minor> never comes from gpulet itself;
// gpulet's minors must agree with it or the node does not come up.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

type simMachine struct {
	DriverVersion string   `json:"driverVersion"`
	GPUs          []simGPU `json:"gpus"`
}

type simGPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	// Minor: the GPU's minor as the machine's YAML gives it (gpulet's must
	// agree: takeMinors).
	Minor int `json:"minor"`
	// MemoryBytes: the GPU's memory as NVML reports it.
	MemoryBytes int64 `json:"memoryTotalBytes"`
	// MIG devices (a MIG-enabled GPU), as `gpulet devices --json` lists them.
	MigEnabled bool `json:"migEnabled"`
	MigDevices []struct {
		UUID    string `json:"uuid"`
		Profile string `json:"profile"`
		GI      int    `json:"gpuInstanceId"`
		CI      int    `json:"computeInstanceId"`
	} `json:"migDevices"`
}

func querySimMachine(gpulet, simLib, machine string) (*simMachine, error) {
	cmd := exec.Command(gpulet, "--nvml-lib", simLib, "devices", "--json")
	cmd.Env = append(os.Environ(), "GPULET_SIM_MACHINE="+machine)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gpulet devices --json: %w", err)
	}
	var m simMachine
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// machineFile is the YAML the simulator reads for machine (its rules, docs/
// nvml-simulator.md): a path when it has a '/' or ends in .yaml/.yml, else
// the built-in profile sim/profiles/<name>.yaml of the checkout ("" is the
// default profile, dgx-h100).
func machineFile(sourceDir, machine string) string {
	if strings.Contains(machine, "/") || strings.HasSuffix(machine, ".yaml") || strings.HasSuffix(machine, ".yml") {
		return machine
	}
	if machine == "" {
		machine = "dgx-h100"
	}
	return filepath.Join(sourceDir, "sim", "profiles", machine+".yaml")
}

// profileMinors reads the minor of every GPU on the nvidia driver from the
// machine's YAML, by lower-case UUID. A GPU bound to another driver has no
// minor (the driver numbers only its own); one on nvidia without an explicit
// `minor:` is an error, as the fixture would otherwise have to guess it.
func profileMinors(sourceDir, machine string) (map[string]int, error) {
	path := machineFile(sourceDir, machine)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the machine's YAML: %w", err)
	}
	type gpu struct {
		UUID        string `json:"uuid"`
		Minor       *int   `json:"minor"`
		BoundDriver string `json:"boundDriver"`
	}
	var doc struct {
		GPUDefaults gpu   `json:"gpuDefaults"`
		GPUs        []gpu `json:"gpus"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	minors := map[string]int{}
	for i, g := range doc.GPUs {
		driver := g.BoundDriver
		if driver == "" {
			driver = doc.GPUDefaults.BoundDriver
		}
		if driver != "" && driver != "nvidia" {
			continue
		}
		if g.Minor == nil {
			return nil, fmt.Errorf("%s: gpus[%d] (%s) has no minor: the fixture takes every GPU's /dev/nvidia<minor> from the machine's YAML", path, i, g.UUID)
		}
		minors[strings.ToLower(g.UUID)] = *g.Minor
	}
	return minors, nil
}

// takeMinors sets every GPU's Minor to the machine's YAML's (profileMinors)
// after checking that gpulet reports the same GPUs with the same minors.
// The error lists every difference.
func (m *simMachine) takeMinors(want map[string]int) error {
	var diffs []string
	seen := map[string]bool{}
	for i := range m.GPUs {
		g := &m.GPUs[i]
		key := strings.ToLower(g.UUID)
		seen[key] = true
		minor, ok := want[key]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("GPU %d (%s) is not a GPU of the machine's YAML on the nvidia driver", g.Index, g.UUID))
		case minor != g.Minor:
			diffs = append(diffs, fmt.Sprintf("GPU %d (%s) has minor %d, the machine's YAML says %d", g.Index, g.UUID, g.Minor, minor))
		}
		g.Minor = minor
	}
	for uuid := range want {
		if !seen[uuid] {
			diffs = append(diffs, fmt.Sprintf("%s of the machine's YAML is missing", uuid))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	sort.Strings(diffs)
	return fmt.Errorf("gpulet devices --json disagrees with the machine's YAML: %s", strings.Join(diffs, "; "))
}

// DRADeviceCount is how many devices gpulet dra publishes for the machine:
// one per GPU without MIG, one per MIG device.
func (m *simMachine) DRADeviceCount() int {
	c := 0
	for _, g := range m.GPUs {
		if g.MigEnabled {
			c += len(g.MigDevices)
		} else {
			c++
		}
	}
	return c
}
