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

// processCPUMicros is the CPU time of every thread the process ever had
// (utime + stime of /proc/<pid>/stat, in clock ticks of 10 ms), or -1.
func processCPUMicros(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command name may hold spaces: fields count from its closing ')'.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return (utime + stime) * 1e6 / ticksPerSecond
}

// sameThreads says whether every thread of `before` is still in `after`.
func sameThreads(before, after threadCPU) bool {
	for tid := range before {
		if _, ok := after[tid]; !ok {
			return false
		}
	}
	return true
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
