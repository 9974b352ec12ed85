package node

// TEMPORARY stand-in for `gpulet sim render ROOT`, which is being written
// on another branch: it makes only what the fixture needs today (the GPUs'
// and the control device nodes, /proc/devices, and the simulator installed
// as the driver's versioned libnvidia-ml) from what `gpulet devices --json`
// reports about the simulated machine. Remove it once render lands.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
)

const (
	nvidiaMajor = 195
	uvmMajor    = 235
	capsMajor   = 236
)

type simMachine struct {
	DriverVersion string `json:"driverVersion"`
	GPUs          []struct {
		Index int    `json:"index"`
		UUID  string `json:"uuid"`
		Minor int    `json:"minor"`
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

func renderStandIn(root string, m *simMachine, simLib string) error {
	dev := filepath.Join(root, "dev")
	if err := os.MkdirAll(dev, 0755); err != nil {
		return err
	}
	nodes := map[string][2]uint32{
		"nvidiactl":        {nvidiaMajor, 255},
		"nvidia-modeset":   {nvidiaMajor, 254},
		"nvidia-uvm":       {uvmMajor, 0},
		"nvidia-uvm-tools": {uvmMajor, 1},
	}
	for _, g := range m.GPUs {
		nodes[fmt.Sprintf("nvidia%d", g.Minor)] = [2]uint32{nvidiaMajor, uint32(g.Minor)}
	}
	for name, mm := range nodes {
		if err := unix.Mknod(filepath.Join(dev, name), unix.S_IFCHR|0666, int(unix.Mkdev(mm[0], mm[1]))); err != nil {
			return fmt.Errorf("mknod %s: %w", name, err)
		}
	}
	procDir := filepath.Join(root, "proc")
	if err := os.MkdirAll(filepath.Join(procDir, "driver/nvidia-caps"), 0755); err != nil {
		return err
	}
	devices := fmt.Sprintf("Character devices:\n%3d nvidia-frontend\n%3d nvidia-uvm\n%3d nvidia-caps\n", nvidiaMajor, uvmMajor, capsMajor)
	if err := os.WriteFile(filepath.Join(procDir, "devices"), []byte(devices), 0644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(procDir, "driver/nvidia-caps/mig-minors"), nil, 0644); err != nil {
		return err
	}
	lib := filepath.Join(root, "usr/lib/x86_64-linux-gnu")
	if err := os.MkdirAll(lib, 0755); err != nil {
		return err
	}
	data, err := os.ReadFile(simLib)
	if err != nil {
		return err
	}
	versioned := "libnvidia-ml.so." + m.DriverVersion
	if err := os.WriteFile(filepath.Join(lib, versioned), data, 0755); err != nil {
		return err
	}
	// The driver's installer makes the soname link too.
	return os.Symlink(versioned, filepath.Join(lib, "libnvidia-ml.so.1"))
}
