package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
)

var columns = []string{serverGpulet, serverGo, serverCpp, serverH2, serverEcho}

// percentile is the nearest-rank percentile: a value that was observed.
func percentile(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

func firstLine(path, prefix string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, prefix) {
			if _, v, ok := strings.Cut(line, ": "); ok && prefix != "" {
				return v
			}
			return line
		}
	}
	return "?"
}

func printMachine(cfg config) {
	fmt.Printf("machine:  %d CPUs (%s), load average %s\n", runtime.NumCPU(),
		firstLine("/proc/cpuinfo", "model name"), firstLine("/proc/loadavg", ""))
	fmt.Printf("node:     NVML simulator, machine %s", cfg.machine)
	if cfg.configFile != "" {
		fmt.Printf(", gpulet --config-file %s", cfg.configFile)
	}
	fmt.Printf("\nclient:   grpc-go %s with k8s.io/kubelet's v1beta1 stubs, dialled as the kubelet dials\n", grpcGoVersion())
	fmt.Printf("servers:  gpulet     %s\n", cfg.gpulet)
	fmt.Printf("          grpc-go    %s (fixed Allocate answer)\n", cfg.goPlugin)
	fmt.Printf("          grpc-c++   %s (Debian's gRPC, sync API, fixed answers)\n", cfg.floor)
	fmt.Printf("          nghttp2    %s (libnghttp2, one epoll thread, fixed answers)\n", cfg.h2Floor)
	fmt.Printf("          echo       %s (one write, one read of gpulet's Allocate byte counts)\n", cfg.echo)
	fmt.Printf("sockets:  %s\n\n", cfg.dir)
}

// row prints one figure for every column that has it ("-" otherwise) and
// gpulet's ratio to grpc-go.
func row(name string, values map[string]float64) {
	fmt.Printf("%-36s", name)
	for _, c := range columns {
		if v, ok := values[c]; ok && !math.IsNaN(v) {
			fmt.Printf(" %9.1f", v)
		} else {
			fmt.Printf(" %9s", "-")
		}
	}
	g, okG := values[serverGpulet]
	r, okR := values[serverGo]
	if okG && okR && r > 0 {
		fmt.Printf(" %9.2f", g/r)
	}
	fmt.Println()
}

func header(unit string) {
	fmt.Printf("%-36s", unit)
	for _, c := range columns {
		fmt.Printf(" %9s", c)
	}
	fmt.Printf(" %9s\n", "gpulet/go")
}

func verdict(what string, ok bool) {
	v := "met"
	if !ok {
		v = "MISSED"
	}
	fmt.Printf("  %-60s %s\n", what, v)
}

func printReport(cfg config, starts startFigures, r *rpcResults) {
	fmt.Printf("devices:  %d advertised by gpulet; one Allocate exchange moves %d bytes in, %d out\n\n",
		len(r.devices), r.bytesIn, r.bytesOut)
	header("milliseconds")
	for _, p := range []float64{50, 99} {
		v := map[string]float64{}
		for s, samples := range starts.wallMs {
			v[s] = percentile(samples, p)
		}
		row(fmt.Sprintf("start -> Register p%.0f (%d starts)", p, cfg.starts), v)
	}
	v := map[string]float64{}
	for s, samples := range starts.cpuMs {
		v[s] = percentile(samples, 50)
	}
	row("CPU until Register p50 (every thread)", v)
	fmt.Println()
	header("microseconds")
	for _, kase := range []string{caseOptions, caseAllocate} {
		for _, p := range []float64{50, 99} {
			v := map[string]float64{}
			for s, cases := range r.latencyUs {
				if samples, ok := cases[kase]; ok {
					v[s] = percentile(samples, p)
				}
			}
			row(fmt.Sprintf("%s p%.0f", kase, p), v)
		}
	}
	for _, kase := range []string{caseOptions, caseAllocate} {
		v := map[string]float64{}
		for s, cases := range r.cpuUs {
			if us, ok := cases[kase]; ok {
				v[s] = us
			}
		}
		row("server CPU per "+kase, v)
	}
	for _, c := range r.coarseCPU {
		fmt.Printf("  (%s: a thread ended during the block; from utime + stime, 10 ms ticks)\n", c)
	}
	fmt.Println()
	header("process")
	row("VmRSS MiB (plugins: registered)", r.rssMiB)
	threads := map[string]float64{}
	for s, n := range r.threads {
		threads[s] = float64(n)
	}
	row("threads after the calls", threads)

	alloc := r.latencyUs
	fmt.Println("\ntargets:")
	verdict("Allocate p50 <= grpc-go's", percentile(alloc[serverGpulet][caseAllocate], 50) <=
		percentile(alloc[serverGo][caseAllocate], 50))
	verdict("Allocate p99 <= grpc-go's", percentile(alloc[serverGpulet][caseAllocate], 99) <=
		percentile(alloc[serverGo][caseAllocate], 99))
	verdict("server CPU per Allocate <= half grpc-go's",
		r.cpuUs[serverGpulet][caseAllocate] <= r.cpuUs[serverGo][caseAllocate]/2)
	verdict("start -> Register p50 <= half grpc-go's",
		percentile(starts.wallMs[serverGpulet], 50) <= percentile(starts.wallMs[serverGo], 50)/2)
	verdict("gpulet VmRSS registered < 15 MiB", r.rssMiB[serverGpulet] < 15)
	fmt.Printf("\nload average after: %s\n", firstLine("/proc/loadavg", ""))
}
