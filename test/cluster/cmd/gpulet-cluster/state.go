package main

import (
	"os"
	"path/filepath"
)

// finishState deals with the state directory once the namespaces are gone
// and the host restored: after a run that passed it is removed, so that a
// test leaves nothing behind; after a failure (or with keep) it stays for
// the developer to read, and its place is logged. The next run with the
// same directory removes it before starting. It returns the run's exit
// code, failed if the directory could not be removed.
func finishState(dir string, code int, keep bool, log func(string, ...any)) int {
	if code != 0 || keep {
		log("state kept in %s (logs: %s); the next run with this --state removes it",
			dir, filepath.Join(dir, "logs"))
		return code
	}
	if err := os.RemoveAll(dir); err != nil {
		log("removing the state directory: %v", err)
		return 1
	}
	return code
}
