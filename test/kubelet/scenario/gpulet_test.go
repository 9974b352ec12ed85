package scenario

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestGpulet runs every scenario against `$GPULET_BIN plugin $GPULET_PLUGIN_ARGS`.
// Skipped unless GPULET_BIN is set (ctest leaves it out: the kubelet_*
// tests run gpulet through the harness binary instead). The plugin inherits the environment, so
// GPULET_SIM_MACHINE / GPULET_SIM_SOCKET (simulator profile and control
// socket) pass through. Expectations (override by environment):
//
//	GPULET_EXPECT_RESOURCE  nvidia.com/gpu
//	GPULET_EXPECT_DEVICES   8 (the dgx-h100 simulator profile)
//	GPULET_EXPECT_ENV       NVIDIA_VISIBLE_DEVICES
//	GPULET_FAULT_CMD        shell command making one GPU unhealthy ($PLUGIN_PID is set)
//	GPULET_RECOVER_CMD      shell command making it healthy again
//	GPULET_FAULT_IDS        comma-separated device IDs the fault must make unhealthy
func TestGpulet(t *testing.T) {
	bin := os.Getenv("GPULET_BIN")
	if bin == "" {
		t.Skip("GPULET_BIN not set")
	}
	devices, err := strconv.Atoi(envOr("GPULET_EXPECT_DEVICES", "8"))
	if err != nil {
		t.Fatalf("GPULET_EXPECT_DEVICES: %v", err)
	}
	spec := Spec{
		PluginArgv: append([]string{bin, "plugin"}, strings.Fields(os.Getenv("GPULET_PLUGIN_ARGS"))...),
		Resource:   envOr("GPULET_EXPECT_RESOURCE", "nvidia.com/gpu"),
		Devices:    devices,
		EnvName:    envOr("GPULET_EXPECT_ENV", "NVIDIA_VISIBLE_DEVICES"),
		// Replica IDs are <uuid>::<n>; NVIDIA_VISIBLE_DEVICES carries the uuid.
		MapID:      func(id string) string { uuid, _, _ := strings.Cut(id, "::"); return uuid },
		FaultCmd:   os.Getenv("GPULET_FAULT_CMD"),
		RecoverCmd: os.Getenv("GPULET_RECOVER_CMD"),
	}
	if ids := os.Getenv("GPULET_FAULT_IDS"); ids != "" {
		spec.FaultIDs = strings.Split(ids, ",")
	}
	if testing.Verbose() {
		spec.Verbose = os.Stderr
	}
	runAllSkipping(t, spec)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
