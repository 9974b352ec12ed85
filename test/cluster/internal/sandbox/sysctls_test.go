package sandbox

import (
	"os"
	"os/exec"
	"testing"
)

// fakeHost is a machine's sysctls, shared by the keepers of its clusters.
type fakeHost struct{ values map[string]string }

func (h *fakeHost) keeper(t *testing.T, dir string, pid int) *sysctlKeeper {
	return &sysctlKeeper{
		dir: dir,
		read: func() map[string]string {
			m := map[string]string{}
			for k, v := range h.values {
				m[k] = v
			}
			return m
		},
		write: func(key, value string) error { h.values[key] = value; return nil },
		pid:   pid,
		log:   t.Logf,
	}
}

// kubelet is what a cluster's kubelet does to the sysctls when it starts.
func (h *fakeHost) kubelet() {
	h.values["vm/overcommit_memory"] = "1"
	h.values["kernel/panic"] = "10"
}

func original() map[string]string {
	return map[string]string{"vm/overcommit_memory": "0", "kernel/panic": "1"}
}

// A live process other than this test, standing for a second cluster's
// outer process; ended at the end of the test.
func otherProcess(t *testing.T) int {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func expectOriginal(t *testing.T, h *fakeHost) {
	t.Helper()
	for k, v := range original() {
		if h.values[k] != v {
			t.Errorf("%s = %s, want %s", k, h.values[k], v)
		}
	}
}

// Two clusters at once, the first started ending first or last: the values
// from before either started come back once both have ended, and not while
// one still runs.
func TestTwoClustersRestoreTheOriginalSysctls(t *testing.T) {
	for _, firstEndsFirst := range []bool{true, false} {
		h := &fakeHost{values: original()}
		dir := t.TempDir()
		a := h.keeper(t, dir, os.Getpid())
		b := h.keeper(t, dir, otherProcess(t))
		if err := a.acquire(); err != nil {
			t.Fatal(err)
		}
		h.kubelet()
		if err := b.acquire(); err != nil { // records nothing: a runs
			t.Fatal(err)
		}
		first, last := a, b
		if !firstEndsFirst {
			first, last = b, a
		}
		if err := first.release(); err != nil {
			t.Fatal(err)
		}
		if h.values["kernel/panic"] != "10" {
			t.Errorf("restored while the other cluster still runs")
		}
		if err := last.release(); err != nil {
			t.Fatal(err)
		}
		expectOriginal(t, h)
		if _, err := os.Stat(a.savedPath()); !os.IsNotExist(err) {
			t.Errorf("the recorded values are still there after the last cluster ended: %v", err)
		}
	}
}

// A cluster killed before it could restore leaves its hold and the values;
// the next cluster puts them back before recording, so it records the
// originals, not the killed cluster's kubelet's.
func TestAKilledClusterIsNoLongerCounted(t *testing.T) {
	h := &fakeHost{values: original()}
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := h.keeper(t, dir, cmd.Process.Pid)
	if err := killed.acquire(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // the killed cluster's outer process is gone
	h.kubelet()
	next := h.keeper(t, dir, os.Getpid())
	if err := next.acquire(); err != nil {
		t.Fatal(err)
	}
	expectOriginal(t, h)
	h.kubelet()
	if err := next.release(); err != nil {
		t.Fatal(err)
	}
	expectOriginal(t, h)
}
