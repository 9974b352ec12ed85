package soak

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"gpulet.dev/test/kubelet/harness"
)

// gpuletProc is the gpulet process under test, its configuration file and
// the /proc samples of each of its lives (a life ends with a SIGKILL).
type gpuletProc struct {
	proc   *harness.PluginProcess
	watch  *logWatch
	sim    simClient
	config string // path of the file gpulet reads
	start  time.Time

	mu    sync.Mutex
	lives []*life
}

// life is one gpulet process: a sample per second (the curve) and one at
// every settled point (what the baseline rule compares).
type life struct {
	Pid     int
	Started time.Duration
	Curve   []procSample
	Settled []procSample
}

func startGpulet(opts Options, m Machine, dir string, start time.Time, tee io.Writer) (*gpuletProc, error) {
	g := &gpuletProc{
		watch:  newLogWatch(),
		sim:    simClient{socket: filepath.Join(dir, "sim.sock")},
		config: filepath.Join(dir, "config.yaml"),
		start:  start,
	}
	if err := g.writeConfig(m.Variants[0].YAML); err != nil {
		return nil, err
	}
	argv := []string{opts.Gpulet, "--nvml-lib", opts.NVMLLib, "-v", "1",
		"plugin", "--config-file", g.config}
	env := []string{
		"GPULET_SIM_MACHINE=" + m.Profile,
		"GPULET_SIM_SOCKET=" + g.sim.socket,
		// The soak's variants set the quiet period; the environment must not.
		"GPULET_HEALTH_QUIET_PERIOD=",
		"DP_DISABLE_HEALTHCHECKS=",
		"DP_ENABLE_HEALTHCHECKS=",
	}
	var out io.Writer = g.watch
	if tee != nil {
		out = io.MultiWriter(g.watch, tee)
	}
	p, err := harness.StartPlugin(argv, env, out)
	if err != nil {
		return nil, err
	}
	g.proc = p
	g.newLife()
	return g, nil
}

// writeConfig replaces the file atomically, as a config manager does.
func (g *gpuletProc) writeConfig(text string) error {
	tmp := g.config + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, g.config)
}

func (g *gpuletProc) newLife() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lives = append(g.lives, &life{Pid: g.proc.Pid(), Started: time.Since(g.start)})
}

// killAndRestart is a crash: SIGKILL, then the same command line again.
func (g *gpuletProc) killAndRestart() error {
	g.proc.Kill()
	if err := g.proc.Restart(); err != nil {
		return err
	}
	g.newLife()
	return nil
}

// sample records one /proc sample of the running process; settled marks a
// sample taken at a settled point.
func (g *gpuletProc) sample(settled bool) (procSample, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.lives[len(g.lives)-1]
	s, err := readProc(l.Pid)
	if err != nil {
		return s, err
	}
	s.At = time.Since(g.start)
	if settled {
		l.Settled = append(l.Settled, s)
	} else {
		l.Curve = append(l.Curve, s)
	}
	return s, nil
}

// Lives returns a copy of the lives recorded so far.
func (g *gpuletProc) Lives() []life {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]life, len(g.lives))
	for i, l := range g.lives {
		out[i] = *l
		out[i].Curve = append([]procSample(nil), l.Curve...)
		out[i].Settled = append([]procSample(nil), l.Settled...)
	}
	return out
}

// reload is a SIGHUP sent to gpulet whose outcome is not known yet.
type reload struct {
	okBefore, badBefore int // gpulet's reload lines before the signal
}

// sendHangUp sends SIGHUP once gpulet reads signals from its signalfd
// (before that a SIGHUP would kill it).
func (g *gpuletProc) sendHangUp(limit time.Duration) (reload, error) {
	pid := g.proc.Pid()
	err := harness.Wait(limit, "gpulet to block SIGHUP (its signal handling is set up)", func() (bool, string, error) {
		if !g.proc.Running() {
			return false, "", fmt.Errorf("gpulet exited: %s", g.proc.ExitError())
		}
		return handlesSignal(pid, int(syscall.SIGHUP)), "SIGHUP neither blocked nor caught", nil
	})
	if err != nil {
		return reload{}, err
	}
	var rl reload
	rl.okBefore, rl.badBefore, _ = g.watch.Reloads()
	return rl, g.proc.Signal(syscall.SIGHUP)
}

// awaitReload waits for the outcome line of a reload and returns whether it
// was accepted, and gpulet's last refusal line.
func (g *gpuletProc) awaitReload(rl reload, limit time.Duration) (accepted bool, refusal string, err error) {
	err = harness.Wait(limit, "gpulet to log the reload's outcome", func() (bool, string, error) {
		if !g.proc.Running() {
			return false, "", fmt.Errorf("gpulet exited after SIGHUP: %s", g.proc.ExitError())
		}
		ok, bad, _ := g.watch.Reloads()
		return ok > rl.okBefore || bad > rl.badBefore, "no \"configuration reloaded\" line yet", nil
	})
	if err != nil {
		return false, "", err
	}
	ok, _, last := g.watch.Reloads()
	return ok > rl.okBefore, last, nil
}

// hangUp is sendHangUp then awaitReload.
func (g *gpuletProc) hangUp(limit time.Duration) (accepted bool, refusal string, err error) {
	rl, err := g.sendHangUp(limit)
	if err != nil {
		return false, "", err
	}
	return g.awaitReload(rl, limit)
}
