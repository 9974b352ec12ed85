package proc

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKillAndRestartKeepTheArgumentsAndTheLog(t *testing.T) {
	g := &Group{LogDir: t.TempDir()}
	defer g.StopAll(5 * time.Second)
	first, err := g.Start("sleeper", []string{"PROC_TEST=1"}, "sleep", "600")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Start("later", nil, "sleep", "600"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Restart(first); err == nil {
		t.Fatal("Restart of a running process: no error")
	}
	killed, err := g.Kill("sleeper")
	if err != nil {
		t.Fatal(err)
	}
	if killed != first || g.Find("sleeper") != nil || len(g.Running()) != 1 {
		t.Fatalf("after Kill: killed %v, group %v", killed, g.Running())
	}
	again, err := g.Restart(killed)
	if err != nil {
		t.Fatal(err)
	}
	if again.Pid() == first.Pid() || !slices.Equal(again.Cmd.Args, []string{"sleep", "600"}) {
		t.Errorf("restarted: PID %d (was %d), args %v", again.Pid(), first.Pid(), again.Cmd.Args)
	}
	if !slices.Contains(again.Cmd.Env, "PROC_TEST=1") {
		t.Errorf("restarted without the added environment")
	}
	if g.Find("sleeper") != again {
		t.Errorf("Find does not return the restarted process")
	}
	if r := g.Running(); len(r) != 2 || r[0] != again || r[1].Name != "later" {
		t.Errorf("the restarted process is not back at its place: %v", r)
	}
	log, err := os.ReadFile(again.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "==== "); n != 2 {
		t.Errorf("the log holds %d start lines, want 2 (appended):\n%s", n, log)
	}
	if _, err := g.Kill("nothing"); err == nil {
		t.Errorf("Kill of an unknown name: no error")
	}
}
