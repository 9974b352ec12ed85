package scenario

import (
	"strings"
	"testing"
)

// The fake plugin registers again only when the kubelet restarts, as
// NVIDIA's does: kubelet-drop leaves it at allocatable 0.
var fakeFails = map[string]string{"kubelet-drop": "waiting for the plugin to register"}

// The fake plugin with its defaults: 4 devices of example.com/gpu on 2 NUMA
// nodes. It serves one resource, without a per-request limit.
func TestFakePlugin(t *testing.T) {
	runAll(t, fakeSpec(t), fakeFails, "resources", "shared-limit")
}

// Other parameters, one device, no topology, PreStartContainer required:
// proves the scenarios follow the Spec rather than the fake's defaults.
func TestFakePluginOtherShape(t *testing.T) {
	spec := fakeSpec(t, "-resource=vendor.example/accel", "-devices=1", "-numa=0",
		"-env=ACCEL_IDS", "-prestart", "-socket=accel.sock")
	spec.Resource, spec.Devices, spec.EnvName = "vendor.example/accel", 1, "ACCEL_IDS"
	spec.KubeletRestarts = 1
	runAll(t, spec, fakeFails, "islands", "resources", "shared-limit")
}

// The harness must fail, with a message saying why, when the plugin does
// not match the Spec.
func TestMismatchFailsClearly(t *testing.T) {
	register, _ := Lookup("register")
	allocate, _ := Lookup("allocate")
	health, _ := Lookup("health")
	cases := []struct {
		name  string
		sc    Scenario
		edit  func(*Spec)
		wants []string
	}{
		{"wrong device count", register, func(s *Spec) { s.Devices = 8 },
			[]string{"timed out", "8 healthy devices", "capacity 4, allocatable 4", "plugin output"}},
		{"wrong env var", allocate, func(s *Spec) { s.EnvName = "NVIDIA_VISIBLE_DEVICES" },
			[]string{"gets no NVIDIA_VISIBLE_DEVICES", "EXAMPLE_VISIBLE_DEVICES=fake-gpu-"}},
		{"plugin exits", register, func(s *Spec) { s.PluginArgv = append(s.PluginArgv, "-devices=oops") },
			[]string{"plugin process ended", "exit status 2", `invalid value "oops"`}},
		// The right number of devices, but not the one the fault names.
		{"fault on another device", health, func(s *Spec) { s.FaultIDs = []string{"fake-gpu-1"} },
			[]string{"exactly [fake-gpu-1] to turn unhealthy", "unhealthy or gone: [fake-gpu-0]",
				"healthy but expected not to be: [fake-gpu-1]", "capacity 4, allocatable 3"}},
		{"no such plugin", register, func(s *Spec) { s.PluginArgv = []string{"/nonexistent/plugin"} },
			[]string{"start plugin", "/nonexistent/plugin"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := fakeSpec(t)
			spec.Timeout = 2e9
			tc.edit(&spec)
			err := Run(spec, tc.sc, t)
			if err == nil {
				t.Fatal("scenario passed; want a failure")
			}
			t.Logf("failed as expected:\n%v", err)
			for _, want := range tc.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not mention %q:\n%v", want, err)
				}
			}
		})
	}
}
