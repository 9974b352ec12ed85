package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"gpulet.dev/test/cluster/internal/proc"
)

// `gpulet extender` runs as a process of the fixture, not as
// deploy/extender's Deployment: the node has no kube-proxy to route a
// Service's address. Everything else is deploy/extender's: the
// ServiceAccount and RBAC of extender.yaml (the extender's token is that
// account's), and scheduler-config.yaml given to kube-scheduler with only
// the address, the CA file, the scheduler's client certificate and its
// kubeconfig filled in. The extender serves HTTPS on the fixture's loopback
// with a certificate of the fixture's CA, and mutual TLS as
// deploy/extender/extender.yaml has it: only a client certificate of its
// own client CA (made here, apart from the cluster's) with the common name
// SchedulerClientName may call it, and kube-scheduler has one.
// deploy/extender/node-policy.yaml, what the extender may write on Nodes,
// is applied with the RBAC.
//
// It listens on every address of the fixture's network namespace, as
// extender.yaml's --address=:12346 has it: kube-scheduler calls it on
// loopback, and pods reach it at the node's address (ExtenderPodAddress)
// through the pod network's bridge, where a Service's address would take
// them on a real cluster.

// ExtenderAddress is where kube-scheduler and the fixture call the
// extender: on the loopback of the fixture's network namespace.
const ExtenderAddress = "127.0.0.1:12346"

// ExtenderPodAddress is where pods reach the extender: the node's address.
const ExtenderPodAddress = NodeIP + ":12346"

const extenderListen = "0.0.0.0:12346"

// SchedulerClientName is the common name of kube-scheduler's client
// certificate for the extender, as deploy/extender/extender.yaml's
// --allowed-client-names has it.
const SchedulerClientName = "system:kube-scheduler"

// Extender is the running `gpulet extender`.
type Extender struct {
	n      *Node
	Proc   *proc.Process
	args   []string
	client *http.Client
	// SchedulerCert and SchedulerKey are the files of kube-scheduler's
	// client certificate for the extender.
	SchedulerCert, SchedulerKey string
}

func (n *Node) schedulerKubeconfig() string {
	return filepath.Join(n.Cfg.Paths.PKI(), "scheduler.kubeconfig")
}

// StartScheduler starts kube-scheduler, or restarts it when it runs: with
// the fixture's flags (config ""), or with a KubeSchedulerConfiguration
// file. It waits until the new scheduler answers /readyz.
func (n *Node) StartScheduler(ctx context.Context, config string) error {
	if n.Scheduler != nil {
		n.Procs.Stop(n.Scheduler, 20*time.Second)
		n.Scheduler = nil
	}
	kc := n.schedulerKubeconfig()
	args := []string{"--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--v=1", n.featureGates()}
	if config == "" {
		args = append(args, "--kubeconfig", kc, "--leader-elect=false", "--profiling=false")
	} else {
		args = append(args, "--config", config)
	}
	var err error
	n.Scheduler, err = n.Procs.Start("kube-scheduler", nil, append([]string{n.k8s("kube-scheduler")}, args...)...)
	if err != nil {
		return err
	}
	// The scheduler's own self-signed serving certificate, on loopback.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return n.waitFor(ctx, "kube-scheduler to be ready", 60*time.Second, func(ctx context.Context) (bool, error) {
		return httpOK(ctx, c, "https://127.0.0.1:10259/readyz"), nil
	})
}

// httpGet returns the body of a GET that answered 200.
func httpGet(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}

func httpOK(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// StartExtender creates deploy/extender/extender.yaml's ServiceAccount and
// RBAC and deploy/extender/node-policy.yaml's admission policy, starts `gpulet extender` with a token of that account and restarts
// kube-scheduler with deploy/extender/scheduler-config.yaml. The returned
// function undoes all of it (the scheduler back to its flags).
func (n *Node) StartExtender(ctx context.Context, policy string) (*Extender, func(context.Context) error, error) {
	undo, err := n.createExtenderRBAC(ctx)
	if err != nil {
		return nil, nil, err
	}
	e := &Extender{n: n}
	cleanup := func(ctx context.Context) error {
		var first error
		if n.Scheduler != nil {
			first = n.StartScheduler(ctx, "")
		}
		e.Stop()
		if err := undo(ctx); err != nil && first == nil {
			first = err
		}
		return first
	}
	fail := func(err error) (*Extender, func(context.Context) error, error) {
		_ = cleanup(ctx)
		return nil, nil, err
	}
	kubeconfig, err := n.extenderKubeconfig(ctx)
	if err != nil {
		return fail(err)
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(NodeIP)}
	if err := n.pki.issue("gpulet-extender", "gpulet-extender", nil, true, nil, ips); err != nil {
		return fail(err)
	}
	clients, err := newPKI(filepath.Join(n.Cfg.Paths.PKI(), "extender-clients"))
	if err != nil {
		return fail(err)
	}
	if err := clients.issue("scheduler", SchedulerClientName, nil, false, nil, nil); err != nil {
		return fail(err)
	}
	e.SchedulerCert, e.SchedulerKey = clients.path("scheduler", "crt"), clients.path("scheduler", "key")
	pool := x509.NewCertPool()
	pool.AddCert(n.pki.caCert)
	e.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	e.args = []string{n.Cfg.Gpulet, "extender", "--address", extenderListen, "--kubeconfig", kubeconfig,
		"--tls-cert-file", n.pki.path("gpulet-extender", "crt"), "--tls-key-file", n.pki.path("gpulet-extender", "key"),
		"--client-ca-file", clients.path("ca", "crt"), "--allowed-client-names", SchedulerClientName,
		"--default-policy", policy}
	if err := e.Start(ctx); err != nil {
		return fail(err)
	}
	config, err := n.schedulerConfig(clients)
	if err != nil {
		return fail(err)
	}
	if err := n.StartScheduler(ctx, config); err != nil {
		return fail(err)
	}
	return e, cleanup, nil
}

// Start starts the extender process and waits until it is ready (its node
// cache listed).
func (e *Extender) Start(ctx context.Context) error {
	var err error
	if e.Proc, err = e.n.Procs.Start("gpulet-extender", nil, e.args...); err != nil {
		return err
	}
	return e.n.waitFor(ctx, "gpulet extender to be ready", 60*time.Second, func(ctx context.Context) (bool, error) {
		return httpOK(ctx, e.client, "https://"+ExtenderAddress+"/readyz"), nil
	})
}

// Ready tells whether the extender answers /readyz.
func (e *Extender) Ready(ctx context.Context) bool {
	return httpOK(ctx, e.client, "https://"+ExtenderAddress+"/readyz")
}

// Metrics reads the extender's /metrics with kube-scheduler's client
// certificate (the only name it lets call it).
func (e *Extender) Metrics(ctx context.Context) (string, error) {
	cert, err := tls.LoadX509KeyPair(e.SchedulerCert, e.SchedulerKey)
	if err != nil {
		return "", err
	}
	tr := e.client.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
	c := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	defer c.CloseIdleConnections()
	return httpGet(ctx, c, "https://"+ExtenderAddress+"/metrics")
}

// PID is the running extender process's, 0 when it is stopped.
func (e *Extender) PID() int {
	if e.Proc == nil || e.Proc.Cmd.Process == nil {
		return 0
	}
	return e.Proc.Cmd.Process.Pid
}

// Stop ends the extender process (SIGTERM).
func (e *Extender) Stop() {
	if e.Proc != nil {
		e.n.Procs.Stop(e.Proc, 20*time.Second)
		e.Proc = nil
	}
}

func (n *Node) createExtenderRBAC(ctx context.Context) (func(context.Context) error, error) {
	objs, err := readObjects(filepath.Join(n.Cfg.SourceDir, "deploy/extender/extender.yaml"))
	if err != nil {
		return nil, err
	}
	var undo []func(context.Context) error
	cleanup := func(ctx context.Context) error {
		var first error
		for i := len(undo) - 1; i >= 0; i-- {
			if err := undo[i](ctx); err != nil && !apierrors.IsNotFound(err) && first == nil {
				first = err
			}
		}
		return first
	}
	policy, err := n.ApplyDeployFile(ctx, "extender/node-policy.yaml")
	if err != nil {
		return nil, err
	}
	undo = append(undo, policy)
	del := metav1.DeleteOptions{}
	for _, o := range objs {
		switch x := o.(type) {
		case *corev1.ServiceAccount:
			_, err = n.Client.CoreV1().ServiceAccounts(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
			undo = append(undo, func(ctx context.Context) error {
				return n.Client.CoreV1().ServiceAccounts(x.Namespace).Delete(ctx, x.Name, del)
			})
		case *rbacv1.ClusterRole:
			_, err = n.Client.RbacV1().ClusterRoles().Create(ctx, x, metav1.CreateOptions{})
			undo = append(undo, func(ctx context.Context) error { return n.Client.RbacV1().ClusterRoles().Delete(ctx, x.Name, del) })
		case *rbacv1.ClusterRoleBinding:
			_, err = n.Client.RbacV1().ClusterRoleBindings().Create(ctx, x, metav1.CreateOptions{})
			undo = append(undo, func(ctx context.Context) error {
				return n.Client.RbacV1().ClusterRoleBindings().Delete(ctx, x.Name, del)
			})
		default:
			// The Deployment and Service: the fixture runs the process.
			continue
		}
		if err != nil {
			_ = cleanup(ctx)
			return nil, fmt.Errorf("deploy/extender/extender.yaml: %w", err)
		}
	}
	return cleanup, nil
}

// extenderKubeconfig writes a kubeconfig with a bound token of the
// extender's service account.
func (n *Node) extenderKubeconfig(ctx context.Context) (string, error) {
	seconds := int64(3600)
	tr, err := n.Client.CoreV1().ServiceAccounts(gpuletNamespace).CreateToken(ctx, "gpulet-extender",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}},
		metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token of kube-system/gpulet-extender: %w", err)
	}
	path := filepath.Join(n.Cfg.Paths.PKI(), "gpulet-extender.kubeconfig")
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: gpulet
  cluster:
    certificate-authority: %s
    server: https://%s:%d
users:
- name: gpulet-extender
  user:
    token: %s
contexts:
- name: gpulet
  context: {cluster: gpulet, user: gpulet-extender}
current-context: gpulet
`, n.pki.path("ca", "crt"), NodeIP, apiServerPort, tr.Status.Token)
	return path, os.WriteFile(path, []byte(text), 0600)
}

// schedulerConfig writes deploy/extender/scheduler-config.yaml with the
// fixture's scheduler kubeconfig, no leader election, the extender's
// loopback address, the fixture's CA and the scheduler's client
// certificate of `clients`.
func (n *Node) schedulerConfig(clients *pki) (string, error) {
	src := filepath.Join(n.Cfg.SourceDir, "deploy/extender/scheduler-config.yaml")
	data, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", src, err)
	}
	exts, ok := cfg["extenders"].([]any)
	if !ok || len(exts) != 1 {
		return "", fmt.Errorf("%s: want one entry under extenders", src)
	}
	ext, ok := exts[0].(map[string]any)
	if !ok {
		return "", fmt.Errorf("%s: extenders[0] is not a mapping", src)
	}
	ext["urlPrefix"] = "https://" + ExtenderAddress + "/gpu-memory"
	tlsCfg, _ := ext["tlsConfig"].(map[string]any)
	if tlsCfg == nil {
		return "", fmt.Errorf("%s: extenders[0].tlsConfig missing", src)
	}
	if tlsCfg["certFile"] == nil || tlsCfg["keyFile"] == nil {
		return "", fmt.Errorf("%s: extenders[0].tlsConfig has no client certificate (certFile, keyFile)", src)
	}
	tlsCfg["caFile"] = n.pki.path("ca", "crt")
	tlsCfg["certFile"] = clients.path("scheduler", "crt")
	tlsCfg["keyFile"] = clients.path("scheduler", "key")
	cfg["clientConnection"] = map[string]any{"kubeconfig": n.schedulerKubeconfig()}
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	cfg["enableProfiling"] = false
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(n.Cfg.Paths.PKI(), "scheduler-extender.yaml")
	return path, os.WriteFile(path, out, 0644)
}
