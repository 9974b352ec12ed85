// gpulet-cluster brings up a one-node Kubernetes cluster inside namespaces
// of its own, deploys gpulet from deploy/ onto a simulated GPU node, runs
// the scenarios and brings everything down again. See docs/testing.md.
//
//	gpulet-cluster --build build --k8s-bin DIR [--dra] [--run REGEX] [--seed N] [--outage-long] [--keep] [--keep-state] [--list]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"gpulet.dev/test/cluster/internal/node"
	"gpulet.dev/test/cluster/internal/proc"
	"gpulet.dev/test/cluster/internal/sandbox"
	"gpulet.dev/test/cluster/internal/scenario"
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s cluster: %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func main() {
	build := flag.String("build", "build", "gpulet build directory (bin/gpulet, bin/gpulet-runtime, sim/lib, test/cluster/ldpreload_marker.so)")
	k8sBin := flag.String("k8s-bin", "", "directory of the Kubernetes binaries (test/cluster/build-k8s prints it)")
	source := flag.String("source", ".", "the gpulet checkout (deploy/ is read from it)")
	state := flag.String("state", "/tmp/gpulet-cluster", "state directory: logs, certificates, data; removed after a run that passed, kept after a failure")
	machine := flag.String("machine", "dgx-h100", "NVML simulator machine (profile name or file)")
	run := flag.String("run", "", "run only the scenarios whose names match this regular expression")
	keep := flag.Bool("keep", false, "after the scenarios, keep the cluster up until interrupted (prints how to reach it); keeps the state directory")
	keepState := flag.Bool("keep-state", false, "keep the state directory after a run that passed")
	list := flag.Bool("list", false, "list the scenarios and exit")
	dra := flag.Bool("dra", false, "run gpulet dra (deploy/dra/) instead of the device plugin, with the DRA feature gates; runs the dra- scenarios")
	flag.BoolVar(&scenario.OutageLong, "outage-long", false, "the API-outage scenarios run every outage for 1 s, 10 s, 30 s and 2 minutes (make soak) instead of one short outage of each kind")
	flag.Int64Var(&scenario.Seed, "seed", 0, "seed of the memory scenarios' random pods (0: from the clock; each run logs its seed)")
	flag.Parse()

	if *list {
		for _, s := range scenario.All() {
			doc := s.Doc
			if s.Machine != "" {
				doc = "(machine " + s.Machine + ") " + doc
			}
			if s.DRA {
				doc = "(--dra) " + doc
			}
			fmt.Printf("%-20s %s\n", s.Name, doc)
		}
		return
	}
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	stateDir := abs(*state)
	cgroup := "gpulet-cluster-" + strings.ReplaceAll(strings.Trim(stateDir, "/"), "/", "-")
	switch sandbox.CurrentRole() {
	case sandbox.Outer:
		if os.Geteuid() != 0 {
			fmt.Fprintln(os.Stderr, "gpulet-cluster: needs root (namespaces, mounts, cgroups, device nodes)")
			os.Exit(1)
		}
		if *k8sBin == "" {
			fmt.Fprintln(os.Stderr, "gpulet-cluster: --k8s-bin is required (run test/cluster/build-k8s)")
			os.Exit(2)
		}
		if _, err := scenario.Select(*run, *machine, *dra); err != nil && !*keep {
			fmt.Fprintln(os.Stderr, "gpulet-cluster:", err)
			os.Exit(2)
		}
		// A run killed before its clean-up may have left cgroups; they are
		// empty (their processes died with the namespace).
		_ = sandbox.RemoveCgroups(cgroup, logf)
		if err := os.RemoveAll(stateDir); err != nil {
			logf("removing the previous state: %v", err)
			os.Exit(1)
		}
		if err := os.MkdirAll(stateDir, 0755); err != nil {
			logf("%v", err)
			os.Exit(1)
		}
		code, err := sandbox.RunOuter(sandbox.Options{CgroupName: cgroup, Log: logf, Keep: *keep})
		if err != nil {
			logf("%v", err)
		}
		os.Exit(finishState(stateDir, code, *keep || *keepState, logf))
	case sandbox.Init:
		os.Exit(sandbox.RunInit(logf))
	}

	if !sandbox.OwnProc() {
		fmt.Fprintln(os.Stderr, "gpulet-cluster: the runner is not inside the fixture's namespaces; refusing to go on")
		os.Exit(1)
	}
	cfg := node.Config{
		Paths:        node.Paths{State: stateDir},
		K8sBin:       abs(*k8sBin),
		Gpulet:       abs(filepath.Join(*build, "bin/gpulet")),
		Runtime:      abs(filepath.Join(*build, "bin/gpulet-runtime")),
		SimLib:       abs(filepath.Join(*build, "sim/lib/libnvidia-ml.so.1")),
		ExploitLib:   abs(filepath.Join(*build, "test/cluster/ldpreload_marker.so")),
		TenantAttack: abs(filepath.Join(*build, "bin/gpulet-tenant-attack")),
		Helm:         abs(filepath.Join(*build, "bin/gpulet-helm")),
		SourceDir:    abs(*source),
		Machine:      *machine,
		CgroupName:   cgroup,
		DRA:          *dra,
		Log:          logf,
	}
	os.Exit(runner(cfg, *run, *keep))
}

func runner(cfg node.Config, run string, keep bool) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	interrupted := make(chan struct{})
	go func() {
		s := <-signals
		logf("%v: bringing the cluster down", s)
		close(interrupted)
		cancel()
	}()

	code := 0
	n, err := node.Up(ctx, cfg)
	if err != nil {
		logf("bring-up failed: %v", err)
		code = 1
	}
	var results []*scenario.T
	if err == nil {
		selected, _ := scenario.Select(run, cfg.Machine, cfg.DRA)
		for _, s := range selected {
			if ctx.Err() != nil {
				break
			}
			logf("--- %s", s.Name)
			start := time.Now()
			t := scenario.Run(ctx, n, s)
			results = append(results, t)
			if f := t.Failures(); len(f) > 0 {
				code = 1
				logf("--- FAIL %s (%.1f s)", s.Name, time.Since(start).Seconds())
				for _, m := range f {
					logf("    %s", m)
				}
			} else {
				logf("--- PASS %s (%.1f s)", s.Name, time.Since(start).Seconds())
			}
		}
	}
	if n != nil {
		report(n, results)
		if code != 0 && n.Client != nil {
			_ = os.WriteFile(filepath.Join(cfg.Paths.Logs(), "kubectl-get-all.txt"),
				[]byte(n.Kubectl("get", "all,events", "-A", "-o", "wide")), 0644)
		}
		if keep && ctx.Err() == nil {
			logf("cluster kept up. In another shell (PID: the namespace's init, printed at the start):\n  nsenter -t PID -m -n -p %s --kubeconfig %s get pods -A\nlogs: %s\nCtrl-C brings it down.",
				filepath.Join(cfg.K8sBin, "kubectl"), n.Kubeconfig, cfg.Paths.Logs())
			<-interrupted
		}
		t := time.Now()
		if err := n.Down(); err != nil {
			logf("tear-down: %v", err)
			code = 1
		}
		logf("tear-down took %.2f s", time.Since(t).Seconds())
	}
	if ctx.Err() != nil && code == 0 && !keep {
		code = 1
	}
	return code
}

// report prints the figures: bring-up phases, the scenarios' timings and
// every component's peak memory.
func report(n *node.Node, results []*scenario.T) {
	fmt.Println("== figures")
	for _, p := range n.Phases {
		fmt.Printf("  %-44s %7.2f s\n", p.Name, p.Took.Seconds())
	}
	for _, t := range results {
		for _, f := range t.Figures {
			fmt.Printf("  %-44s %9s\n", f.Name, f.Value)
		}
	}
	type mem struct {
		name string
		peak int64
	}
	var mems []mem
	for _, p := range n.Procs.Running() {
		if peak, err := proc.PeakRSS(p.Pid()); err == nil {
			mems = append(mems, mem{p.Name, peak})
		}
	}
	// gpulet's own process in its pod.
	for _, pid := range sandbox.OtherPids() {
		if sandbox.Comm(pid) == "gpulet" {
			if rss, err := proc.RSS(pid); err == nil {
				peak, _ := proc.PeakRSS(pid)
				fmt.Printf("  %-44s %6.1f MiB (peak %.1f MiB)\n", "gpulet pod RSS", float64(rss)/(1<<20), float64(peak)/(1<<20))
			}
		}
	}
	sort.Slice(mems, func(i, j int) bool { return mems[i].peak > mems[j].peak })
	var total int64
	for _, m := range mems {
		fmt.Printf("  peak RSS %-35s %6.1f MiB\n", m.name, float64(m.peak)/(1<<20))
		total += m.peak
	}
	fmt.Printf("  peak RSS %-35s %6.1f MiB\n", "(sum of the above)", float64(total)/(1<<20))
}
