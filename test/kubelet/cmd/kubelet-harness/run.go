package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"gpulet.dev/test/kubelet/harness"
	"gpulet.dev/test/kubelet/scenario"
)

// runMain runs scenarios and returns the exit code: 0 when none failed and,
// with GPULET_FAIL_ON_SKIP=1, none skipped (did not apply to the plugin).
func runMain(args []string) int {
	var o options
	fs := newFlags("run", &o)
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: kubelet-harness run [flags] <scenario>...|all [-- <plugin command line>]")
		fmt.Fprintln(os.Stderr, "scenarios: "+strings.Join(names(), ", "))
		fs.PrintDefaults()
	}
	rest, err := parse(fs, &o, args)
	if err != nil {
		return 2
	}
	if o.spec.Resource == "" || o.spec.Devices == 0 {
		fmt.Fprintln(os.Stderr, "kubelet-harness run: with a plugin command line, --resource and --devices are required")
		return 2
	}
	scenarios, err := pick(rest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelet-harness run:", err)
		return 2
	}
	fmt.Printf("kubelet-harness: Kubernetes %s device manager against: %s\n",
		harness.KubernetesVersion(), strings.Join(o.spec.PluginArgv, " "))
	fmt.Printf("expecting %d x %s", o.spec.Devices, o.spec.Resource)
	if o.spec.EnvName != "" {
		fmt.Printf(", allocations listed in %s", o.spec.EnvName)
	}
	fmt.Println()
	var passed, failed int
	var skipped []string
	for _, sc := range scenarios {
		fmt.Printf("=== %s: %s\n", sc.Name, sc.Summary)
		start := time.Now()
		err := scenario.Run(o.spec, sc, stdoutReporter{os.Stdout})
		took := time.Since(start).Round(time.Millisecond)
		switch {
		case err == nil:
			passed++
			fmt.Printf("--- PASS %s (%v)\n", sc.Name, took)
		case errors.Is(err, scenario.ErrSkipped):
			skipped = append(skipped, sc.Name)
			fmt.Printf("--- SKIP %s: %v\n", sc.Name, err)
		default:
			failed++
			fmt.Printf("--- FAIL %s (%v)\n%v\n", sc.Name, took, indent(err.Error()))
		}
	}
	fmt.Printf("kubelet-harness: %d passed, %d failed, %d skipped\n", passed, failed, len(skipped))
	if failed > 0 {
		return 1
	}
	if len(skipped) > 0 && os.Getenv("GPULET_FAIL_ON_SKIP") == "1" {
		// The strict mode of `make test` and CI (docs/testing.md, "Skipped
		// tests"): a scenario that does not apply to the plugin is not to
		// be selected, so a skip means the test checks less than it says.
		fmt.Fprintf(os.Stderr, "kubelet-harness: scenarios skipped (%s), and GPULET_FAIL_ON_SKIP=1 makes that a failure: select only the scenarios that apply\n",
			strings.Join(skipped, ", "))
		return 1
	}
	return 0
}

func names() []string {
	var out []string
	for _, sc := range scenario.All() {
		out = append(out, sc.Name)
	}
	return out
}

func pick(args []string) ([]scenario.Scenario, error) {
	if len(args) == 0 {
		return nil, errors.New("name at least one scenario, or all (" + strings.Join(names(), ", ") + ")")
	}
	var out []scenario.Scenario
	for _, name := range args {
		if name == "all" {
			out = append(out, scenario.All()...)
			continue
		}
		sc, ok := scenario.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(names(), ", "))
		}
		out = append(out, sc)
	}
	return out, nil
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
