package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// PluginProcess is the device plugin under test, run as a child process that
// shares the harness's private mount namespace. Its stdout and stderr are
// kept in Output.
type PluginProcess struct {
	Argv   []string
	Env    []string // added to the harness's environment
	Output *LogBuffer

	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// StartPlugin starts argv with the harness's environment plus env. Lines it
// prints are kept and, if tee is not nil, copied there prefixed "plugin: ".
func StartPlugin(argv, env []string, tee io.Writer) (*PluginProcess, error) {
	p := &PluginProcess{Argv: argv, Env: env, Output: NewLogBuffer(200, tee, "plugin: ")}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *PluginProcess) start() error {
	if len(p.Argv) == 0 {
		return errors.New("no plugin command line given")
	}
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = p.Output, p.Output
	// If the harness dies, the plugin must not linger holding sockets.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start plugin %q: %w", strings.Join(p.Argv, " "), err)
	}
	p.cmd, p.done, p.err = cmd, make(chan struct{}), nil
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return nil
}

// Restart starts the same command line again after the process has exited.
func (p *PluginProcess) Restart() error {
	if p.Running() {
		return errors.New("plugin is still running; stop it before Restart")
	}
	return p.start()
}

// Pid is the process ID of the current run.
func (p *PluginProcess) Pid() int { return p.cmd.Process.Pid }

// Running reports whether the current run has not exited yet.
func (p *PluginProcess) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// ExitError describes how the process ended, or "" while it runs.
func (p *PluginProcess) ExitError() string {
	if p.Running() {
		return ""
	}
	if p.err == nil {
		return "exited with status 0"
	}
	return p.err.Error()
}

// Signal sends sig to the running plugin.
func (p *PluginProcess) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM and waits up to grace for the exit, then SIGKILLs.
func (p *PluginProcess) Stop(grace time.Duration) error {
	if !p.Running() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("plugin did not exit within %v of SIGTERM; killed it", grace)
}

// Kill sends SIGKILL (a crash) and waits for the exit.
func (p *PluginProcess) Kill() {
	if p.Running() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
