// Package scenario holds the tests run on the one-node cluster. Each is a
// function of the running node; the cluster's CLI runs all of them or the
// ones named with --run.
package scenario

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"gpulet.dev/test/cluster/internal/node"
)

// T is a scenario's handle: failures and figures.
type T struct {
	Name    string
	N       *node.Node
	Ctx     context.Context
	failed  []string
	Figures []Figure
}

// Figure is one measured value for the report.
type Figure struct {
	Name  string
	Value string
}

// Errorf records a failure and continues.
func (t *T) Errorf(format string, args ...any) {
	t.failed = append(t.failed, fmt.Sprintf(format, args...))
}

// Fatalf records a failure and ends the scenario.
func (t *T) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic(fatal{})
}

// Figure records a measured value.
func (t *T) Figure(name string, d time.Duration) {
	t.Figures = append(t.Figures, Figure{name, fmt.Sprintf("%.2f s", d.Seconds())})
}

// FigureText records a measured value that is not a duration.
func (t *T) FigureText(name, value string) {
	t.Figures = append(t.Figures, Figure{name, value})
}

type fatal struct{}

// Scenario is one registered test.
type Scenario struct {
	Name string
	Doc  string
	// Machine: the simulator machine the scenario needs ("" = any); it is
	// selected only when the cluster runs that machine.
	Machine string
	// DRA: the scenario needs a node running gpulet dra (--dra); the
	// others need the device plugin. Each runs only on its kind of node.
	DRA bool
	Run func(t *T)
}

var all []Scenario

func register(s Scenario) { all = append(all, s) }

// order is the order scenarios run in: the basic claim first, then the
// ones that restart or reconfigure gpulet; the API-outage ones last on
// their clusters.
var order = []string{"gpu-pod", "exploit-ldpreload", "deployment", "strategies", "kubelet-restart", "gpulet-recreate", "xid", "time-slicing",
	"reload-unchanged", "reload-lost-gpu", "reload-rejected", "reload-replicas", "reload-xid", "node-labels", "node-feature", "mps-replicas", "mig-pod", "mig-reload",
	"memory-shares", "tenant-attacks", "memory-latency", "vfio-mixed", "helm", "helm-node-config",
	"dra-nvlink", "dra-shared", "dra-extended-resource", "dra-memory", "dra-mig", "dra-unsatisfiable", "dra-xid",
	"dra-claim-latency", "api-outage-memory", "api-outage-dra"}

func rank(name string) int {
	for i, n := range order {
		if n == name {
			return i
		}
	}
	return len(order)
}

// All returns every scenario, in run order.
func All() []Scenario {
	sort.SliceStable(all, func(i, j int) bool { return rank(all[i].Name) < rank(all[j].Name) })
	return all
}

// Select returns the scenarios whose names match re ("" = all) and that
// run on machine ("" = any machine) with the device plugin or, when dra,
// with gpulet dra, in run order.
func Select(re, machine string, dra bool) ([]Scenario, error) {
	r, err := regexp.Compile(re)
	if err != nil {
		return nil, err
	}
	var out []Scenario
	for _, s := range All() {
		if r.MatchString(s.Name) && s.DRA == dra && (machine == "" || s.Machine == "" || s.Machine == machine) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		mode := "the device plugin"
		if dra {
			mode = "gpulet dra"
		}
		return nil, fmt.Errorf("no scenario for machine %q and %s matches %q (have: %s)", machine, mode, re, strings.Join(Names(), ", "))
	}
	return out, nil
}

// Names lists every scenario.
func Names() []string {
	var n []string
	for _, s := range all {
		n = append(n, s.Name)
	}
	sort.Strings(n)
	return n
}

// Run runs one scenario and returns its failures.
func Run(ctx context.Context, n *node.Node, s Scenario) (t *T) {
	t = &T{Name: s.Name, N: n, Ctx: ctx}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fatal); !ok {
				t.failed = append(t.failed, fmt.Sprintf("panic: %v", r))
			}
		}
	}()
	s.Run(t)
	return t
}

// Failures of a finished scenario.
func (t *T) Failures() []string { return t.failed }
