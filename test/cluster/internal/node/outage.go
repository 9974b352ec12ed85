package node

// API-server outages for the outage scenarios: kube-apiserver stopped
// (SIGSTOP) and continued, killed and started again with the same
// arguments, or cut off in the fixture's own network namespace (iptables
// rules dropping every packet to and from its port, so connections go
// silent rather than refused). Each is undone by its own call, and Down
// undoes whatever is still in force, so no exit path leaves the API server
// stopped or its port cut.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"gpulet.dev/test/cluster/internal/sandbox"
)

const apiServerName = "kube-apiserver"

// outageRules are the iptables rules of a cut: the API server's port
// dropped on the way in (clients' packets) and on the way out (its
// answers), both in the fixture's network namespace only.
var outageRules = [][]string{
	{"INPUT", "-p", "tcp", "--dport", fmt.Sprint(apiServerPort), "-m", "comment", "--comment", "gpulet-outage", "-j", "DROP"},
	{"OUTPUT", "-p", "tcp", "--sport", fmt.Sprint(apiServerPort), "-m", "comment", "--comment", "gpulet-outage", "-j", "DROP"},
}

func iptables(args ...string) error {
	// Only ever run inside the fixture's namespaces (the runner checks
	// this at its start; checked again here, as the rules are a network's).
	if !sandbox.OwnProc() {
		return fmt.Errorf("iptables %s: not inside the fixture's namespaces; refusing", strings.Join(args, " "))
	}
	out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// PauseAPIServer stops kube-apiserver with SIGSTOP.
func (n *Node) PauseAPIServer() error {
	p := n.Procs.Find(apiServerName)
	if p == nil {
		return fmt.Errorf("no %s running", apiServerName)
	}
	n.apiPaused = p
	return syscall.Kill(p.Pid(), syscall.SIGSTOP)
}

// ResumeAPIServer continues a paused kube-apiserver (SIGCONT); nothing
// when it is not paused.
func (n *Node) ResumeAPIServer() error {
	p := n.apiPaused
	if p == nil {
		return nil
	}
	n.apiPaused = nil
	return syscall.Kill(p.Pid(), syscall.SIGCONT)
}

// KillAPIServer ends kube-apiserver with SIGKILL; RestartAPIServer starts
// it again.
func (n *Node) KillAPIServer() error {
	p, err := n.Procs.Kill(apiServerName)
	if err != nil {
		return err
	}
	n.apiKilled = p
	return nil
}

// RestartAPIServer starts the killed kube-apiserver again with the same
// arguments; nothing when it was not killed.
func (n *Node) RestartAPIServer() error {
	p := n.apiKilled
	if p == nil {
		return nil
	}
	if _, err := n.Procs.Restart(p); err != nil {
		return err
	}
	n.apiKilled = nil
	return nil
}

// CutAPIServer drops every packet to and from the API server's port in the
// fixture's network namespace.
func (n *Node) CutAPIServer() error {
	for i, r := range outageRules {
		if err := iptables(append([]string{"-I"}, r...)...); err != nil {
			for _, done := range outageRules[:i] {
				_ = iptables(append([]string{"-D"}, done...)...)
			}
			return err
		}
		n.apiCut = true
	}
	return nil
}

// RestoreAPIServer removes the rules of CutAPIServer; nothing when none
// is in force.
func (n *Node) RestoreAPIServer() error {
	if !n.apiCut {
		return nil
	}
	var errs []string
	for _, r := range outageRules {
		if err := iptables(append([]string{"-D"}, r...)...); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	n.apiCut = false
	return nil
}

// EndOutages undoes every outage in force: the cut removed, a paused API
// server continued, a killed one started again.
func (n *Node) EndOutages() error {
	var errs []string
	for _, undo := range []func() error{n.RestoreAPIServer, n.ResumeAPIServer, n.RestartAPIServer} {
		if err := undo(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("ending the API-server outage: %s", strings.Join(errs, "; "))
	}
	return nil
}

// APIServerReady tells whether the API server answers /readyz within a
// second.
func (n *Node) APIServerReady(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	body, err := n.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil && string(body) == "ok"
}

// KubeletMetrics reads the kubelet's /metrics straight from its port with
// the admin client certificate (the kubelet trusts the cluster's CA): it
// answers while the API server is away.
func (n *Node) KubeletMetrics(ctx context.Context) (string, error) {
	cert, err := tls.LoadX509KeyPair(n.pki.path("admin", "crt"), n.pki.path("admin", "key"))
	if err != nil {
		return "", err
	}
	// The kubelet's own self-signed serving certificate, in the
	// fixture's namespace.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}}
	defer c.CloseIdleConnections()
	return httpGet(ctx, c, fmt.Sprintf("https://%s:10250/metrics", NodeIP))
}
