package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// threadCPU is the CPU nanoseconds each live thread of a process has run
// (/proc/<pid>/task/*/schedstat, first field), by thread ID. Unlike utime and
// stime it is exact, and unlike a round trip it does not grow while the
// process waits for a CPU.
type threadCPU map[string]float64

func readThreadCPU(pid int) threadCPU {
	out := threadCPU{}
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the thread exited
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			continue
		}
		if ns, err := strconv.ParseFloat(fields[0], 64); err == nil {
			out[filepath.Base(filepath.Dir(path))] = ns
		}
	}
	return out
}

// cpuMicrosBetween is the CPU time in microseconds the threads alive at
// `after` used since `before` (a thread that exited in between is missed; a
// new one counts whole).
func cpuMicrosBetween(before, after threadCPU) float64 {
	total := 0.0
	for tid, ns := range after {
		total += ns - before[tid]
	}
	return total / 1000
}

// vmRSSMiB is VmRSS of /proc/<pid>/status in MiB, or -1.
func vmRSSMiB(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if kib, err := strconv.ParseFloat(fields[0], 64); err == nil {
				return kib / 1024
			}
		}
	}
	return -1
}

// threadCount is the number of threads of a process, or -1.
func threadCount(pid int) int {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return -1
	}
	return len(tasks)
}
