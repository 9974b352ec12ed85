package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"gpulet.dev/test/kubelet/soak"
)

// soakMain runs gpulet's chaos soak and returns the exit code.
func soakMain(args []string) int {
	var o soak.Options
	var seconds int
	var verbose bool
	var decisions string
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.StringVar(&o.Gpulet, "gpulet", "", "gpulet binary (required)")
	fs.StringVar(&o.NVMLLib, "nvml-lib", "", "the NVML simulator, libnvidia-ml.so.1 (required)")
	fs.IntVar(&seconds, "seconds", envInt("SOAK_SECONDS", 1800), "duration, split evenly between the machines (default $SOAK_SECONDS, else 1800)")
	fs.Int64Var(&o.Seed, "seed", int64(envInt("SOAK_SEED", 0)), "random seed (default $SOAK_SEED, else from the clock)")
	fs.DurationVar(&o.SettleTimeout, "settle-timeout", 30*time.Second, "limit for every device to be advertised healthy again after the last fault")
	fs.IntVar(&o.Pods, "pods", 6, "concurrent pod workers")
	fs.Func("machine", "soak only this node (islands-16 or a100-mig; repeatable; default both)", func(v string) error {
		for _, m := range soak.Machines() {
			if m.Profile == v {
				o.Machines = append(o.Machines, m)
				return nil
			}
		}
		return fmt.Errorf("unknown node %q (islands-16, a100-mig)", v)
	})
	fs.StringVar(&decisions, "decisions", "", "write the driver's decisions to this file, one a line (two runs with one seed write the same lines, the shorter a prefix of the longer)")
	fs.BoolVar(&verbose, "v", false, "print every fault, gpulet's output and the kubelet's log as they happen")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: kubelet-harness soak --gpulet PATH --nvml-lib PATH [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || o.Gpulet == "" || o.NVMLLib == "" || seconds < 1 {
		if err == nil {
			fs.Usage()
		}
		return 2
	}
	o.Duration = time.Duration(seconds) * time.Second
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano() % 1_000_000_000
	}
	if verbose {
		o.Verbose = os.Stderr
	}
	if decisions != "" {
		f, err := os.Create(decisions)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer f.Close()
		o.Decisions = f
	}
	if err := soak.Run(o); err != nil {
		fmt.Fprintln(os.Stdout, "soak: FAIL:", err)
		return 1
	}
	return 0
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
