package scenario

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"gpulet.dev/test/kubelet/internal/fakeplugin"
	"gpulet.dev/test/kubelet/internal/mountns"
)

// fakeEnv makes the test binary act as the fake plugin when the harness
// starts it, so the tests need no separately built plugin.
const fakeEnv = "KUBELET_HARNESS_TEST_FAKE_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		os.Exit(fakeplugin.Main(os.Args[1:]))
	}
	// Scenarios share the process-wide device plugin directory, so tests in
	// this package never run in parallel; separate `go test` processes may.
	if err := mountns.Enter(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// fakeSpec runs this test binary as the fake plugin with the given flags.
func fakeSpec(t *testing.T, args ...string) Spec {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{
		PluginArgv: append([]string{self}, args...),
		PluginEnv:  []string{fakeEnv + "=1"},
		Resource:   "example.com/gpu",
		Devices:    4,
		EnvName:    "EXAMPLE_VISIBLE_DEVICES",
		FaultCmd:   "kill -USR1 $PLUGIN_PID",
		RecoverCmd: "kill -USR2 $PLUGIN_PID",
		// SIGUSR1 takes the fake's first device.
		FaultIDs: []string{fakeplugin.DeviceID(0)},
	}
}

// runAll runs every scenario as a subtest. notApplicable names the
// scenarios known not to apply to spec (no extra resource, one NUMA node,
// ...): each must say so (skipf), and then passes; any other scenario must
// run. No t.Skip for them: a run with GPULET_FAIL_ON_SKIP=1 fails on a
// skipped test (scripts/go-test), and these are no missing install step.
// `fails` names the scenarios the plugin is known to fail, each with a
// part of the error it must fail with (the scenario catches such a plugin).
func runAll(t *testing.T, spec Spec, fails map[string]string, notApplicable ...string) {
	na := map[string]bool{}
	for _, name := range notApplicable {
		na[name] = true
	}
	for _, sc := range All() {
		t.Run(sc.Name, func(t *testing.T) {
			err := Run(spec, sc, t)
			if want, ok := fails[sc.Name]; ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("scenario %s: %v; want a failure saying %q", sc.Name, err, want)
				}
				t.Logf("failed as expected: %v", err)
				return
			}
			switch {
			case na[sc.Name] && errors.Is(err, ErrSkipped):
				t.Logf("does not apply, as expected: %v", err)
			case na[sc.Name] && err == nil:
				t.Fatalf("scenario %s ran; the test expects it not to apply to this spec", sc.Name)
			case errors.Is(err, ErrSkipped):
				t.Fatalf("scenario %s: %v (the test expects it to apply)", sc.Name, err)
			case err != nil:
				t.Fatalf("scenario %s: %v", sc.Name, err)
			}
		})
	}
}

// runAllSkipping runs every scenario as a subtest, skipping those that do
// not apply to spec: for a plugin whose shape the test does not know.
func runAllSkipping(t *testing.T, spec Spec) {
	for _, sc := range All() {
		t.Run(sc.Name, func(t *testing.T) {
			err := Run(spec, sc, t)
			if errors.Is(err, ErrSkipped) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatalf("scenario %s: %v", sc.Name, err)
			}
		})
	}
}
