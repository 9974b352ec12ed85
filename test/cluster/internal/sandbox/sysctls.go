package sandbox

// The global sysctls the kubelet sets are shared by every cluster on the
// machine: two clusters running at once (two build trees' tests) change the
// same values. So their original values are kept in one place on the host,
// recorded by the first cluster that starts while none runs and put back by
// the last one that ends; each running cluster holds a file named after its
// outer process's PID, so one that was killed no longer counts.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// HostStateDir is where the clusters of this machine keep the sysctls'
// original values and their holds: under /run, so a reboot (which resets
// the sysctls too) forgets them.
const HostStateDir = "/run/gpulet-cluster"

// sysctlKeeper records and restores the global sysctls for the clusters of
// one machine.
type sysctlKeeper struct {
	dir   string                        // HostStateDir, or a test's directory
	read  func() map[string]string      // the current values
	write func(key, value string) error // sets one
	pid   int                           // this cluster's outer process
	log   func(string, ...any)
}

func newSysctlKeeper(log func(string, ...any)) *sysctlKeeper {
	return &sysctlKeeper{
		dir:  HostStateDir,
		read: func() map[string]string { m, _ := readSysctls(); return m },
		write: func(key, value string) error {
			return os.WriteFile("/proc/sys/"+key, []byte(value), 0644)
		},
		pid: os.Getpid(),
		log: log,
	}
}

func (k *sysctlKeeper) savedPath() string { return filepath.Join(k.dir, "sysctls") }
func (k *sysctlKeeper) holdsDir() string  { return filepath.Join(k.dir, "holds") }
func (k *sysctlKeeper) holdPath(pid int) string {
	return filepath.Join(k.holdsDir(), strconv.Itoa(pid))
}

// locked runs f holding an exclusive lock on the directory's lock file.
func (k *sysctlKeeper) locked(f func() error) error {
	if err := os.MkdirAll(k.holdsDir(), 0755); err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(k.dir, "lock"), os.O_CREATE|os.O_RDWR, 0644)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN) //nolint:errcheck
	return f()
}

// startTime is a process's start time (field 22 of /proc/<pid>/stat), so a
// reused PID is not taken for the process that held it; "" if it is gone.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// liveHolders removes the holds of processes that have ended and returns
// the PIDs of the others.
func (k *sysctlKeeper) liveHolders() ([]int, error) {
	entries, err := os.ReadDir(k.holdsDir())
	if err != nil {
		return nil, err
	}
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(k.holdPath(pid))
		if st := startTime(pid); st != "" && st == strings.TrimSpace(string(b)) {
			live = append(live, pid)
			continue
		}
		_ = os.Remove(k.holdPath(pid))
	}
	sort.Ints(live)
	return live, nil
}

func (k *sysctlKeeper) readSaved() (map[string]string, error) {
	b, err := os.ReadFile(k.savedPath())
	if err != nil {
		return nil, err
	}
	saved := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if key, value, ok := strings.Cut(l, "="); ok {
			saved[key] = value
		}
	}
	return saved, nil
}

func (k *sysctlKeeper) writeSaved(values map[string]string) error {
	var lines []string
	for key, value := range values {
		lines = append(lines, key+"="+value)
	}
	sort.Strings(lines)
	tmp := k.savedPath() + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0644); err != nil {
		return err
	}
	return os.Rename(tmp, k.savedPath())
}

// restoreSaved puts the recorded values back and forgets them.
func (k *sysctlKeeper) restoreSaved() error {
	saved, err := k.readSaved()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	now := k.read()
	var errs []string
	keys := make([]string, 0, len(saved))
	for key := range saved {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if now[key] == saved[key] {
			continue
		}
		k.log("restoring sysctl %s: %s -> %s", strings.ReplaceAll(key, "/", "."), now[key], saved[key])
		if err := k.write(key, saved[key]); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return os.Remove(k.savedPath())
}

// acquire is called before the cluster starts: the first cluster to start
// while none runs records the values (after putting back those of a
// cluster that was killed before it could), then every cluster holds them.
func (k *sysctlKeeper) acquire() error {
	return k.locked(func() error {
		live, err := k.liveHolders()
		if err != nil {
			return err
		}
		if len(live) == 0 {
			if err := k.restoreSaved(); err != nil {
				return err
			}
			if err := k.writeSaved(k.read()); err != nil {
				return err
			}
		}
		return os.WriteFile(k.holdPath(k.pid), []byte(startTime(k.pid)), 0644)
	})
}

// release is called after the cluster has ended: the last cluster to end
// restores the recorded values.
func (k *sysctlKeeper) release() error {
	return k.locked(func() error {
		if err := os.Remove(k.holdPath(k.pid)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		live, err := k.liveHolders()
		if err != nil {
			return err
		}
		if len(live) > 0 {
			k.log("another cluster is still running (PID %v); the last one to end restores the sysctls", live)
			return nil
		}
		return k.restoreSaved()
	})
}
