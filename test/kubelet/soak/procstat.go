package soak

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// procSample is what /proc says about a process at one moment.
type procSample struct {
	At      time.Duration // since the soak of this machine started
	FDs     int
	Threads int
	RSSKiB  int64
}

func (s procSample) String() string {
	return fmt.Sprintf("fds %d, threads %d, RSS %.1f MiB", s.FDs, s.Threads, float64(s.RSSKiB)/1024)
}

// readProc samples /proc/<pid>: open file descriptors, threads and resident
// set size.
func readProc(pid int) (procSample, error) {
	var s procSample
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.FDs = len(entries)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		switch key {
		case "Threads":
			s.Threads, _ = strconv.Atoi(fields[0])
		case "VmRSS":
			s.RSSKiB, _ = strconv.ParseInt(fields[0], 10, 64)
		}
	}
	return s, nil
}

// handlesSignal reports whether the process blocks or catches signal signo,
// i.e. a SIGHUP would no longer kill it (gpulet blocks it early in start-up
// and reads it from a signalfd).
func handlesSignal(pid, signo int) bool {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	bit := uint64(1) << (signo - 1)
	for _, line := range strings.Split(string(status), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok || (key != "SigBlk" && key != "SigCgt") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64)
		if err == nil && mask&bit != 0 {
			return true
		}
	}
	return false
}
