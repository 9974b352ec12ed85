// Package proc starts the cluster's components as child processes, each
// logging to its own file, and ends them by PID in reverse order.
package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one started component.
type Process struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string
	env     []string // what Start added to the environment
	slot    int      // its place in the group when Kill removed it
	done    chan struct{}
	err     error
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error, valid after Done.
func (p *Process) Err() error { return p.err }

// Pid of the process.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Group owns processes. Thread-safe.
type Group struct {
	LogDir string
	mu     sync.Mutex
	procs  []*Process
}

// Start runs argv with env added to this process's environment; stdout and
// stderr go to <LogDir>/<name>.log (appended, so a restart keeps the
// earlier run's lines).
func (g *Group) Start(name string, env []string, argv ...string) (*Process, error) {
	logPath := filepath.Join(g.LogDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "==== %s: %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	// No parent-death signal: Go delivers it when the forking OS thread
	// exits, not the process. Should the runner die, the namespace's init
	// ends everything instead.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Cmd: cmd, LogPath: logPath, env: env, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	g.mu.Lock()
	g.procs = append(g.procs, p)
	g.mu.Unlock()
	return p, nil
}

// Stop ends one process: SIGTERM, then SIGKILL after grace. It is removed
// from the group.
func (g *Group) Stop(p *Process, grace time.Duration) {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(p.Pid(), syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(p.Pid(), syscall.SIGKILL)
			<-p.done
		}
	}
	g.remove(p)
}

// remove takes p out of the group and returns where it was (-1: absent).
func (g *Group) remove(p *Process) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, q := range g.procs {
		if q == p {
			g.procs = append(g.procs[:i], g.procs[i+1:]...)
			return i
		}
	}
	return -1
}

// Find returns the owned process called name, or nil.
func (g *Group) Find(name string) *Process {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.procs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Kill ends the owned process called name with SIGKILL, waits for it and
// removes it from the group. It returns the ended process, to give to
// Restart.
func (g *Group) Kill(name string) (*Process, error) {
	p := g.Find(name)
	if p == nil {
		return nil, fmt.Errorf("no process %s in the group", name)
	}
	_ = syscall.Kill(p.Pid(), syscall.SIGKILL)
	<-p.done
	p.slot = g.remove(p)
	return p, nil
}

// Restart starts a process Kill ended again: the same name, arguments and
// environment, logging to the same file, at its place in the group (so
// StopAll still ends it after the processes started after it first).
func (g *Group) Restart(p *Process) (*Process, error) {
	select {
	case <-p.done:
	default:
		return nil, fmt.Errorf("%s (PID %d) still runs", p.Name, p.Pid())
	}
	q, err := g.Start(p.Name, p.env, p.Cmd.Args...)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := len(g.procs); p.slot >= 0 && p.slot < n-1 && g.procs[n-1] == q {
		copy(g.procs[p.slot+1:], g.procs[p.slot:n-1])
		g.procs[p.slot] = q
	}
	return q, nil
}

// StopAll ends every process, the last started first.
func (g *Group) StopAll(grace time.Duration) {
	for {
		g.mu.Lock()
		n := len(g.procs)
		var p *Process
		if n > 0 {
			p = g.procs[n-1]
		}
		g.mu.Unlock()
		if p == nil {
			return
		}
		g.Stop(p, grace)
	}
}

// Running lists the processes still owned.
func (g *Group) Running() []*Process {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*Process(nil), g.procs...)
}

// PeakRSS returns a process's peak resident set size in bytes (VmHWM).
func PeakRSS(pid int) (int64, error) {
	return statusKB(pid, "VmHWM:")
}

// RSS returns a process's current resident set size in bytes (VmRSS).
func RSS(pid int) (int64, error) {
	return statusKB(pid, "VmRSS:")
}

func statusKB(pid int, key string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, err := strconv.ParseInt(f[1], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}
