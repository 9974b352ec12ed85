// Package scenario holds the conformance scenarios the harness runs against a
// device plugin: each starts the kubelet's real device manager and the plugin
// process, drives them through one situation (registration, allocation,
// kubelet restart, socket deletion, plugin crash, bad requests, health
// change) and returns an error that says what the kubelet saw. Everything
// plugin-specific is in Spec, so the same scenarios check the fake plugin and
// gpulet.
package scenario

import (
	"errors"
	"fmt"
	"io"
	"time"

	"gpulet.dev/test/kubelet/harness"
)

// Spec says how to run the plugin under test and what the kubelet must see.
type Spec struct {
	PluginArgv []string // command line of the plugin process
	PluginEnv  []string // KEY=VALUE added to the harness's own environment

	Resource string // resource name the plugin must register, e.g. nvidia.com/gpu
	Devices  int    // devices it must advertise, all healthy at start

	// EnvName, if set, is the environment variable every allocation must set
	// to the allocated devices, comma-separated in any order, each passed
	// through MapID (default: the device ID itself; duplicates collapse).
	EnvName string
	MapID   func(deviceID string) string
	// CheckRunOptions, if set, is called for every admitted container with
	// the devices the kubelet chose, for checks EnvName cannot express.
	CheckRunOptions func(ids []string, opts *harness.RunOptions) error

	// FaultCmd and RecoverCmd are `sh -c` commands for the health scenario
	// (skipped when FaultCmd is empty), run with PLUGIN_PID set. FaultCmd must
	// make exactly FaultDevices devices unhealthy (default 1, or the number
	// of FaultIDs); RecoverCmd, if set, must make them healthy again.
	FaultCmd     string
	RecoverCmd   string
	FaultDevices int
	// FaultIDs, if set, are the device IDs FaultCmd must make unhealthy,
	// known from the fault itself (the GPU it names): the kubelet must then
	// show exactly these unhealthy and every other device still healthy,
	// and after RecoverCmd exactly the devices it had before.
	FaultIDs []string

	// ExtraResources are the other resources the plugin must register, with
	// their healthy device counts (the resources scenario checks them).
	ExtraResources map[string]int
	// ExtraEnvName, if set, is the variable that lists an extra resource's
	// device instead of EnvName (a mixed node: container GPUs beside
	// passthrough ones); such a container must then get neither EnvName nor
	// a /dev/vfio node.
	ExtraEnvName string
	// SharedLimit says the plugin refuses a container asking for more than
	// one device of the resource (NVIDIA's failRequestsGreaterThanOne); the
	// shared-limit scenario checks the kubelet's admission error.
	SharedLimit bool

	NUMANodes       []int         // the machine's NUMA nodes (nil: harness.DefaultNUMANodes)
	KubeletRestarts int           // kubelet restarts in kubelet-restart (default 3)
	Timeout         time.Duration // limit for every wait (default 20s)
	Verbose         io.Writer     // if set, plugin and kubelet logs are copied here live
	KubeletLogLevel int           // klog -v for the device manager (default 0)
}

func (s Spec) withDefaults() Spec {
	if s.MapID == nil {
		s.MapID = func(id string) string { return id }
	}
	if s.FaultDevices == 0 {
		s.FaultDevices = max(1, len(s.FaultIDs))
	}
	if s.KubeletRestarts == 0 {
		s.KubeletRestarts = 3
	}
	if s.Timeout == 0 {
		s.Timeout = 20 * time.Second
	}
	return s
}

func (s Spec) validate() error {
	switch {
	case len(s.PluginArgv) == 0:
		return errors.New("spec: no plugin command line")
	case s.Resource == "":
		return errors.New("spec: no resource name")
	case s.Devices < 1:
		return fmt.Errorf("spec: expected device count must be at least 1, got %d", s.Devices)
	case len(s.FaultIDs) > 0 && len(s.FaultIDs) != s.FaultDevices:
		return fmt.Errorf("spec: %d fault device IDs %v, but the fault makes %d devices unhealthy",
			len(s.FaultIDs), s.FaultIDs, s.FaultDevices)
	}
	return nil
}

// ErrSkipped is returned (wrapped) by a scenario that does not apply.
var ErrSkipped = errors.New("skipped")

func skipf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSkipped, fmt.Sprintf(format, args...))
}

// Scenario is one named situation.
type Scenario struct {
	Name    string
	Summary string
	Run     func(e *Env) error
}

// All returns every scenario, in the order `run all` uses.
func All() []Scenario {
	return []Scenario{
		{"register", "plugin registers; capacity, options and device IDs are as expected", runRegister},
		{"allocate", "pods get disjoint devices and the expected run options; over-asking is rejected", runAllocate},
		{"allocate-sizes", "a pod of every size from 1 to all devices is admitted with that many devices", runAllocateSizes},
		{"preferred", "GetPreferredAllocation answers are valid and the kubelet follows them", runPreferred},
		{"islands", "with two free devices on each of two NUMA nodes, a 2-device pod stays on one node", runIslands},
		{"kubelet-restart", "plugin re-registers after each kubelet restart; allocations survive", runKubeletRestart},
		{"socket-deleted", "plugin re-registers after its socket is deleted", runSocketDeleted},
		{"kubelet-drop", "plugin registers again when the kubelet drops its client", runKubeletDrop},
		{"plugin-restart", "kubelet sees the plugin go away (SIGTERM, SIGKILL) and come back", runPluginRestart},
		{"bad-requests", "Allocate with unknown IDs fails with INVALID_ARGUMENT naming the ID", runBadRequests},
		{"health", "a device fault and recovery reach the kubelet through ListAndWatch", runHealth},
		{"resources", "every other resource registers with its devices, and a pod gets one of each", runResources},
		{"shared-limit", "a request for 2 devices of a shared resource fails admission with NVIDIA's error", runSharedLimit},
	}
}

// Lookup finds a scenario by name.
func Lookup(name string) (Scenario, bool) {
	for _, s := range All() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}
