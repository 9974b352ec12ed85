package node

// What the fixture needs to know about the simulated machine, from
// `gpulet devices --json`.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

type simMachine struct {
	DriverVersion string `json:"driverVersion"`
	GPUs          []struct {
		Index int    `json:"index"`
		UUID  string `json:"uuid"`
		Minor int    `json:"minor"`
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
	} `json:"gpus"`
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
