package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run that passed leaves nothing behind; a failed one (or one asked to
// keep its state) keeps the directory and says where it is.
func TestFinishStateRemovesTheStateOnlyAfterAPass(t *testing.T) {
	for _, c := range []struct {
		name     string
		code     int
		keep     bool
		wantKept bool
	}{
		{"passed", 0, false, false},
		{"failed", 1, false, true},
		{"interrupted", 130, false, true},
		{"passed, kept", 0, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			if err := os.MkdirAll(filepath.Join(dir, "logs"), 0755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "logs", "kubelet.log"), []byte("x"), 0644); err != nil {
				t.Fatal(err)
			}
			var logged []string
			log := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
			if got := finishState(dir, c.code, c.keep, log); got != c.code {
				t.Errorf("exit code %d, want %d", got, c.code)
			}
			_, err := os.Stat(dir)
			if kept := err == nil; kept != c.wantKept {
				t.Fatalf("state directory kept: %v, want %v (stat: %v)", kept, c.wantKept, err)
			}
			said := strings.Join(logged, "\n")
			if c.wantKept && !strings.Contains(said, dir) {
				t.Errorf("the log does not say where the kept state is: %q", said)
			}
		})
	}
}

// A state directory that cannot be removed is something left behind: the
// run fails and says why. (Root may remove anything, so the directory is
// one whose path the kernel refuses.)
func TestFinishStateFailsWhenTheStateCannotBeRemoved(t *testing.T) {
	var logged []string
	log := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	bad := filepath.Join(t.TempDir(), "state\x00")
	if got := finishState(bad, 0, false, log); got == 0 {
		t.Fatalf("exit code 0 after failing to remove %q", bad)
	}
	if len(logged) == 0 || !strings.Contains(logged[0], "removing the state directory") {
		t.Errorf("log %q does not name the failure", logged)
	}
}
