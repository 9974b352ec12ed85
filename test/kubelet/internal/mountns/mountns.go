// Package mountns gives the harness a private /var/lib/kubelet/device-plugins.
//
// The kubelet's device manager (devicemanager.NewManagerImpl) always serves
// its registration socket at the fixed path
// /var/lib/kubelet/device-plugins/kubelet.sock and deletes every other socket
// in that directory when it starts. To run it on a developer machine or in CI
// without touching (or being disturbed by) a real kubelet, and to let several
// harness processes run at once, Enter re-executes the current program in a
// new mount namespace and mounts an empty tmpfs over that directory there.
// Everything the harness starts afterwards (the plugin under test) inherits
// the namespace, so it sees the same private directory.
package mountns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// Dir is the directory the kubelet's device manager uses for its sockets.
const Dir = "/var/lib/kubelet/device-plugins"

// markerEnv is set in the re-executed child so it knows it is already inside
// the private namespace.
const markerEnv = "GPULET_KUBELET_HARNESS_NS"

// Inside reports whether this process runs inside the private namespace set
// up by Enter.
func Inside() bool { return os.Getenv(markerEnv) != "" }

// Enter makes sure the rest of the program runs in a private mount namespace
// with a fresh tmpfs at Dir.
//
// In the parent it re-executes os.Args in a new mount namespace, waits for the
// child and exits with the child's exit code: it never returns. In the child
// it mounts the tmpfs and returns nil. Call it first thing in main or
// TestMain, before any goroutine depends on the file system.
func Enter() error {
	if Inside() {
		return mountTmpfs()
	}
	code, err := runChild()
	if err != nil {
		return err
	}
	os.Exit(code)
	return nil
}

func runChild() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("mountns: cannot find own executable: %w", err)
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), markerEnv+"=1")
	// Go's fork/exec makes "/" recursively private after unsharing, so the
	// tmpfs mounted by the child never propagates back to the host.
	attr := &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		// Without root, a user namespace in which we are root allows the mount.
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("mountns: cannot start %s in a private mount namespace "+
			"(needs root, or unprivileged user namespaces): %w", self, err)
	}
	// The child does the work and cleans up its plugin processes, so it gets
	// the signals; the parent only waits.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	go func() {
		for s := range signals {
			_ = cmd.Process.Signal(s)
		}
	}()
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() {
				return 128 + int(status.Signal()), nil
			}
			return exit.ExitCode(), nil
		}
		return 0, fmt.Errorf("mountns: waiting for %s: %w", self, err)
	}
	return 0, nil
}

func mountTmpfs() error {
	// MkdirAll may create the empty directory on the host file system: that is
	// the only trace the harness leaves outside its namespace.
	if err := os.MkdirAll(Dir, 0o750); err != nil {
		return fmt.Errorf("mountns: create %s: %w", Dir, err)
	}
	if err := syscall.Mount("tmpfs", Dir, "tmpfs", 0, "mode=0750"); err != nil {
		return fmt.Errorf("mountns: mount tmpfs on %s: %w", Dir, err)
	}
	return nil
}
