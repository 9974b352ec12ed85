package sandbox

import (
	"os"
	"strings"
	"testing"
)

// Appending a second GPULET_CLUSTER_ROLE would leave the first one in
// force (getenv returns the first), and init would start init again.
func TestWithRoleReplacesTheRole(t *testing.T) {
	t.Setenv(roleEnv, string(Init))
	env := withRole(Runner)
	var roles []string
	for _, e := range env {
		if strings.HasPrefix(e, roleEnv+"=") {
			roles = append(roles, e)
		}
	}
	if len(roles) != 1 || roles[0] != roleEnv+"="+string(Runner) {
		t.Fatalf("roles in the environment: %v", roles)
	}
}

// Outside the fixture's PID namespace /proc's PID 1 is not the fixture's
// init, so nothing may be signalled.
func TestOtherPidsIsEmptyOutsideTheNamespace(t *testing.T) {
	if os.Getpid() != 1 && OwnProc() {
		t.Fatalf("OwnProc() is true outside the fixture's namespace")
	}
	if pids := OtherPids(); len(pids) != 0 {
		t.Fatalf("OtherPids() = %d pids outside the fixture's namespace", len(pids))
	}
}
