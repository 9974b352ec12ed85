package soak

import (
	"strings"
	"testing"
	"time"

	"gpulet.dev/test/kubelet/harness"
)

// fakeRun is a machine run around a stand-in process (not gpulet) and a
// simulator socket nobody serves.
func fakeRun(t *testing.T, argv ...string) *machineRun {
	t.Helper()
	p, err := harness.StartPlugin(argv, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(5 * time.Second) })
	r := &machineRun{
		machine: Machines()[0], slot: time.Minute, stats: newStats(), start: time.Now(),
		opts:   Options{SettleTimeout: time.Second},
		gpulet: &gpuletProc{proc: p, watch: newLogWatch(), sim: simClient{socket: t.TempDir() + "/sim.sock"}},
	}
	r.gpulet.newLife()
	r.driver = newDriver(r, 1)
	return r
}

func wantViolation(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !IsViolation(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want a violation containing %q", err, want)
	}
}

func TestExitBeforeSigkillIsAFailure(t *testing.T) {
	r := fakeRun(t, "/bin/true")
	if err := harness.Wait(5*time.Second, "the stand-in to exit", func() (bool, string, error) {
		return !r.gpulet.proc.Running(), "running", nil
	}); err != nil {
		t.Fatal(err)
	}
	wantViolation(t, r.driver.kill(), "exited on its own before a scheduled SIGKILL")
	if r.driver.delivered[faultKill] != 0 {
		t.Error("a SIGKILL of a process that was gone counted as delivered")
	}
}

func TestUnansweredFaultIsAFailure(t *testing.T) {
	r := fakeRun(t, "sleep", "60")
	wantViolation(t, r.driver.sim(faultWaitError, "wait-error 999 1"), "the simulator did not take \"wait-error 999 1\"")
	wantViolation(t, r.driver.lose(3), "the simulator did not take \"lose 3\"")
	wantViolation(t, r.driver.xidStorm(decision{Targets: []string{"1"}, Xid: 31}), "event 1 of a storm")
	if r.driver.delivered != [numFaultKinds]int{} {
		t.Errorf("faults counted as delivered: %v", r.driver.delivered)
	}
}

func TestUnnoticedLostGPUIsAFailure(t *testing.T) {
	r := fakeRun(t, "sleep", "60")
	r.driver.lost[5] = 0
	wantViolation(t, r.driver.restore(5, 100*time.Millisecond), "GPU 5 was lost and gpulet did not notice")
}

func TestRefusedValidReloadIsAFailure(t *testing.T) {
	r := fakeRun(t, "sleep", "60")
	r.pending = &reload{}
	_, _ = r.gpulet.watch.Write([]byte("E1 daemon_apply.cc:37] configuration not reloaded, keeping the previous one: GPU lost\n"))
	wantViolation(t, r.awaitPending(), "gpulet refused the valid file")
	r.pending = &reload{okBefore: 0, badBefore: 1}
	_, _ = r.gpulet.watch.Write([]byte("I1 daemon_apply.cc:81] configuration reloaded\n"))
	if err := r.awaitPending(); err != nil || r.driver.delivered[faultReload] != 1 {
		t.Errorf("an accepted reload: %v, %d delivered", err, r.driver.delivered[faultReload])
	}
}

// Recovery is timed from the last fault delivered, not from the settle.
func TestRecoveryDeadlineFromTheLastFault(t *testing.T) {
	r := &machineRun{opts: Options{SettleTimeout: 30 * time.Second}}
	before := time.Now()
	if d := r.recoveryDeadline(); d.Before(before.Add(30*time.Second)) || d.After(time.Now().Add(30*time.Second)) {
		t.Errorf("no fault yet: deadline %v from now, want 30s", time.Until(d))
	}
	r.lastFault.Store(time.Now().Add(-20 * time.Second).UnixNano())
	if d := time.Until(r.recoveryDeadline()); d > 10*time.Second || d < 9*time.Second {
		t.Errorf("fault 20 s ago: deadline in %v, want about 10s", d)
	}
	r.lastSettled = time.Now() // the fault was before the last settled point
	if d := time.Until(r.recoveryDeadline()); d < 29*time.Second {
		t.Errorf("settled since the fault: deadline in %v, want 30s", d)
	}
}
