// Package sandbox runs the cluster fixture inside namespaces it creates:
// a new mount, network and PID namespace.
//
// Three processes of the same executable take part:
//
//	outer   the command the developer (or ctest) ran. It records the host
//	        state the cluster may change (global sysctls; shared with the
//	        other clusters running on the machine, see sysctls.go), starts
//	        "init" in the new namespaces, waits for it, then restores that
//	        state (the last cluster to end does) and removes the cgroups the
//	        kubelet made. It does this even when init was killed.
//	init    PID 1 of the new PID namespace. It makes every mount private,
//	        starts "runner", reaps every orphan (containerd's shims are
//	        reparented to it), forwards SIGINT/SIGTERM to the runner, and
//	        when the runner has exited ends by PID any process still alive.
//	        Because it is PID 1, the kernel kills whatever is left in the
//	        namespace when it exits, and because its parent-death signal is
//	        SIGKILL, a killed outer process takes the whole namespace along.
//	runner  brings the node up, runs the scenarios and brings it down.
//
// Mounts made by init and the runner live in the private mount namespace
// and the network is the namespace's own, so nothing of either reaches the
// host; the cgroups and the global (not per-namespace) sysctls the kubelet
// changes are the host state the outer process restores.
package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const roleEnv = "GPULET_CLUSTER_ROLE"

// Role is the part this process plays.
type Role string

const (
	Outer  Role = ""
	Init   Role = "init"
	Runner Role = "runner"
)

// CurrentRole tells which of the three processes this is.
func CurrentRole() Role { return Role(os.Getenv(roleEnv)) }

// Host state the kubelet changes that no namespace isolates: the kubelet's
// setupKernelTunables writes these unless protectKernelDefaults is set.
var GlobalSysctls = []string{
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

// Options is what the outer process needs to know.
type Options struct {
	// CgroupName is the kubelet's cgroup root (one level under every
	// hierarchy's root); removed after the run.
	CgroupName string
	// Log receives the outer process's own messages.
	Log func(format string, args ...any)
	// Keep: say how to enter the namespaces (the cluster stays up).
	Keep bool
}

// RunOuter starts init in new namespaces with the same arguments, waits for
// it and restores the host. It returns init's exit code, and a code other
// than 0 with every error.
func RunOuter(opts Options) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 1, err
	}
	sysctls := newSysctlKeeper(opts.Log)
	if err := sysctls.acquire(); err != nil {
		return 1, fmt.Errorf("recording the sysctls in %s: %w", HostStateDir, err)
	}
	attr := &os.ProcAttr{
		Env:   withRole(Init),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys: &syscall.SysProcAttr{
			Cloneflags:   syscall.CLONE_NEWPID | syscall.CLONE_NEWNET,
			Unshareflags: syscall.CLONE_NEWNS, // Go then makes "/" recursively private
			Pdeathsig:    syscall.SIGKILL,
		},
	}
	p, err := os.StartProcess(self, os.Args, attr)
	if err != nil {
		if rerr := restoreHost(opts, sysctls); rerr != nil {
			opts.Log("restoring the host: %v", rerr)
		}
		return 1, fmt.Errorf("cannot start the fixture in new namespaces (needs root): %w", err)
	}
	if opts.Keep {
		opts.Log("the fixture's namespaces: nsenter -t %d -m -n -p", p.Pid)
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for s := range signals {
			_ = p.Signal(s)
		}
	}()
	state, err := p.Wait()
	signal.Stop(signals)
	code := 1
	if err == nil {
		code = exitCode(state)
	}
	if rerr := restoreHost(opts, sysctls); rerr != nil {
		opts.Log("restoring the host: %v", rerr)
		if code == 0 {
			code = 1
		}
	}
	return code, err
}

func exitCode(state *os.ProcessState) int {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return state.ExitCode()
}

func readSysctls() (map[string]string, error) {
	saved := map[string]string{}
	for _, key := range GlobalSysctls {
		b, err := os.ReadFile("/proc/sys/" + key)
		if err != nil {
			continue // not on this kernel: nothing to restore
		}
		saved[key] = strings.TrimSpace(string(b))
	}
	return saved, nil
}

func restoreHost(opts Options, sysctls *sysctlKeeper) error {
	var errs []string
	if err := sysctls.release(); err != nil {
		errs = append(errs, err.Error())
	}
	if err := RemoveCgroups(opts.CgroupName, opts.Log); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// RunInit is PID 1 of the namespace: it starts the runner, reaps orphans and
// returns the runner's exit code once the runner and everything left behind
// have ended.
func RunInit(log func(string, ...any)) int {
	self, err := os.Executable()
	if err != nil {
		log("%v", err)
		return 1
	}
	if os.Getpid() != 1 {
		log("init: not PID 1 of a new PID namespace; refusing to go on")
		return 1
	}
	// The namespace's own /proc, so that every PID read from it is one of
	// this namespace's processes.
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		log("init: mount /proc: %v", err)
		return 1
	}
	if !OwnProc() {
		log("init: /proc is not this PID namespace's; refusing to go on")
		return 1
	}
	// Every mount was made private when the namespace was created, so none
	// reaches the host. Shared again now, the mounts form new peer groups
	// of this namespace only; the kubelet needs that for volumes with
	// mountPropagation (deploy/'s driver-root is HostToContainer).
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_SHARED, ""); err != nil {
		log("init: make / shared: %v", err)
		return 1
	}
	runner, err := os.StartProcess(self, os.Args, &os.ProcAttr{
		Env:   withRole(Runner),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		log("cannot start the runner: %v", err)
		return 1
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for s := range signals {
			_ = runner.Signal(s)
		}
	}()
	code := reapUntil(runner.Pid)
	if left := endRemaining(log); left > 0 {
		log("init: %d process(es) outlived the runner and were killed", left)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func reapUntil(pid int) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 1
		}
		if got == pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// withRole is this process's environment with the role set to r.
func withRole(r Role) []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, roleEnv+"=") {
			env = append(env, e)
		}
	}
	return append(env, roleEnv+"="+string(r))
}

// OwnProc reports whether /proc belongs to this process's PID namespace
// and that namespace is the fixture's (PID 1 is the fixture's init): only
// then may PIDs read from /proc be signalled.
func OwnProc() bool {
	self, err := os.Readlink("/proc/self")
	if err != nil || self != strconv.Itoa(os.Getpid()) {
		return false
	}
	env, err := os.ReadFile("/proc/1/environ")
	if err != nil {
		return os.Getpid() == 1
	}
	return strings.Contains(string(env), "\x00"+roleEnv+"="+string(Init)+"\x00") ||
		strings.HasPrefix(string(env), roleEnv+"="+string(Init)+"\x00")
}

// endRemaining kills by PID every process of the namespace but this one,
// and reaps them. Returns how many there were.
func endRemaining(log func(string, ...any)) int {
	if !OwnProc() {
		log("init: /proc is not this namespace's; killing nothing")
		return 0
	}
	pids := OtherPids()
	for _, pid := range pids {
		log("init: killing leftover process %d (%s)", pid, Comm(pid))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(OtherPids()) > 0 && time.Now().Before(deadline) {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); err != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return len(pids)
}

// OtherPids lists the processes visible in /proc other than this one and
// PID 1 (in the fixture's PID namespace: everything the fixture started).
// It lists nothing unless OwnProc holds.
func OtherPids() []int {
	if !OwnProc() {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid == 1 {
			continue
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			// A zombie has already ended; it only waits to be reaped.
			if f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// Comm is a process's command name, for messages.
func Comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}
