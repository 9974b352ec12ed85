// Package node brings up a one-node Kubernetes cluster inside the fixture's
// namespaces: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// containerd (gpulet-runtime as its default runtime, runc beneath), the
// kubelet, and gpulet deployed from deploy/ onto a simulated GPU node.
package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"gpulet.dev/test/cluster/internal/proc"
	"gpulet.dev/test/cluster/internal/sandbox"
)

// Node is a running cluster.
type Node struct {
	Cfg        Config
	Client     *kubernetes.Clientset
	Kubeconfig string // admin
	Procs      *proc.Group
	Machine    *simMachine
	Kubelet    *proc.Process
	Containerd *proc.Process
	Scheduler  *proc.Process
	criRelay   *criRelay
	// Outages in force (outage.go): undone by their calls, or by Down.
	apiPaused *proc.Process
	apiKilled *proc.Process
	apiCut    bool
	// Times of the bring-up phases, for the report.
	Phases  []Phase
	created []string
	started time.Time
	pki     *pki
}

// Phase is one timed step of the bring-up.
type Phase struct {
	Name string
	Took time.Duration
}

func (n *Node) phase(name string, start time.Time) {
	n.Phases = append(n.Phases, Phase{name, time.Since(start)})
	n.Cfg.Log("%-28s %6.2f s", name, time.Since(start).Seconds())
}

// Up brings the node up. On error the caller still calls Down.
func Up(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	n := &Node{Cfg: cfg, Procs: &proc.Group{LogDir: cfg.Paths.Logs()}, started: time.Now()}
	p := cfg.Paths
	for _, d := range []string{p.Logs(), p.Etcd(), p.Containerd(), p.PodLogs(), p.CNI(), p.StaticCDI(), p.Images()} {
		if err := os.MkdirAll(d, 0755); err != nil {
			return n, err
		}
	}
	t := time.Now()
	created, err := mountPrivate(p)
	n.created = created
	if err != nil {
		return n, err
	}
	if err := installRuntime(p, cfg.Runtime); err != nil {
		return n, err
	}
	if err := network(); err != nil {
		return n, err
	}
	if err := sandbox.MakeCgroups(cfg.CgroupName); err != nil {
		return n, err
	}
	n.phase("namespaces, mounts, network", t)

	t = time.Now()
	if err := n.controlPlane(ctx); err != nil {
		return n, err
	}
	n.phase("control plane ready", t)

	t = time.Now()
	if err := n.gpuNode(); err != nil {
		return n, err
	}
	n.phase("simulated GPU node rendered", t)

	t = time.Now()
	if err := n.startContainerd(ctx); err != nil {
		return n, err
	}
	if cfg.DRA {
		if n.criRelay, err = startCRIRelay(CRIRelaySocket, ContainerdSocket); err != nil {
			return n, err
		}
	}
	n.phase("containerd + images", t)

	t = time.Now()
	if err := n.StartKubelet(); err != nil {
		return n, err
	}
	if err := n.waitNodeReady(ctx); err != nil {
		return n, err
	}
	if err := n.waitServiceAccount(ctx, "default"); err != nil {
		return n, err
	}
	n.phase("node Ready, untainted", t)

	t = time.Now()
	if cfg.DRA {
		if err := n.DeployGpuletDra(ctx); err != nil {
			return n, err
		}
		n.phase("gpulet dra deployed, slices published and seen by the scheduler", t)
	} else {
		if err := n.DeployGpulet(ctx, NoSharingConfig); err != nil {
			return n, err
		}
		n.phase("gpulet deployed, GPUs advertised", t)
	}
	n.Phases = append(n.Phases, Phase{"cluster up (total)", time.Since(n.started)})
	return n, nil
}

// featureGates is the --feature-gates flag of every component: the DRA
// gates in DRA mode, else the empty --feature-gates= (the defaults).
func (n *Node) featureGates() string {
	if n.Cfg.DRA {
		return "--feature-gates=" + DRAFeatureGates
	}
	return "--feature-gates="
}

func (n *Node) k8s(name string) string { return filepath.Join(n.Cfg.K8sBin, name) }

func (n *Node) controlPlane(ctx context.Context) error {
	p := n.Cfg.Paths
	ca, err := newPKI(p.PKI())
	if err != nil {
		return err
	}
	n.pki = ca
	ip := net.ParseIP(NodeIP)
	certs := []struct {
		name, cn string
		orgs     []string
		server   bool
	}{
		{"apiserver", "kube-apiserver", nil, true},
		{"admin", "kubernetes-admin", []string{"system:masters"}, false},
		{"controller-manager", "system:kube-controller-manager", nil, false},
		{"scheduler", "system:kube-scheduler", nil, false},
		{"kubelet", "system:node:" + NodeName, []string{"system:nodes"}, false},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, false},
	}
	for _, c := range certs {
		var dns []string
		var ips []net.IP
		if c.server {
			dns = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
			ips = []net.IP{ip, net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)}
		}
		if err := ca.issue(c.name, c.cn, c.orgs, c.server, dns, ips); err != nil {
			return err
		}
	}
	if err := ca.serviceAccountKey(); err != nil {
		return err
	}
	server := fmt.Sprintf("https://%s:%d", NodeIP, apiServerPort)
	kc := map[string]string{}
	for _, name := range []string{"admin", "controller-manager", "scheduler", "kubelet"} {
		path, err := ca.kubeconfig(name, server)
		if err != nil {
			return err
		}
		kc[name] = path
	}
	n.Kubeconfig = kc["admin"]

	if _, err := n.Procs.Start("etcd", nil, "etcd",
		"--name", "gpulet", "--data-dir", p.Etcd(),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "gpulet=http://127.0.0.1:2380", "--listen-metrics-urls", "",
		"--unsafe-no-fsync"); err != nil {
		return err
	}
	pki := func(f string) string { return filepath.Join(p.PKI(), f) }
	if _, err := n.Procs.Start("kube-apiserver", nil, n.k8s("kube-apiserver"),
		"--etcd-servers", "http://127.0.0.1:2379",
		"--advertise-address", NodeIP, "--bind-address", "0.0.0.0", "--secure-port", fmt.Sprint(apiServerPort),
		"--service-cluster-ip-range", ServiceCIDR,
		"--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", "NodeRestriction",
		"--allow-privileged=true",
		"--client-ca-file", pki("ca.crt"),
		"--tls-cert-file", pki("apiserver.crt"), "--tls-private-key-file", pki("apiserver.key"),
		"--kubelet-client-certificate", pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key", pki("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types", "InternalIP",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", pki("sa.pub"),
		"--service-account-signing-key-file", pki("sa.key"),
		"--cert-dir", filepath.Join(p.PKI(), "apiserver-generated"),
		"--profiling=false", "--v=1", n.featureGates()); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", n.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	if n.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if err := n.waitFor(ctx, "the API server to be ready", 90*time.Second, func(ctx context.Context) (bool, error) {
		body, err := n.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	}); err != nil {
		return err
	}
	if _, err := n.Procs.Start("kube-controller-manager", nil, n.k8s("kube-controller-manager"),
		"--kubeconfig", kc["controller-manager"],
		"--authentication-kubeconfig", kc["controller-manager"],
		"--authorization-kubeconfig", kc["controller-manager"],
		"--bind-address", "127.0.0.1",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file", pki("sa.key"),
		"--root-ca-file", pki("ca.crt"),
		"--cluster-signing-cert-file", pki("ca.crt"), "--cluster-signing-key-file", pki("ca.key"),
		"--service-cluster-ip-range", ServiceCIDR,
		"--profiling=false", "--v=1", n.featureGates()); err != nil {
		return err
	}
	if err := n.StartScheduler(ctx, ""); err != nil {
		return err
	}
	return n.writeKubeletConfig(kc["kubelet"])
}

// gpuNode renders the simulated GPU node, writes the static CDI spec for it
// (as `nvidia-ctk cdi generate` / `gpulet cdi generate` is run on a node
// before the runtime is pointed at it) and gpulet-runtime's config.
func (n *Node) gpuNode() error {
	p := n.Cfg.Paths
	m, err := querySimMachine(n.Cfg.Gpulet, n.Cfg.SimLib, n.Cfg.Machine)
	if err != nil {
		return err
	}
	// The scenarios expect each GPU's device node from the machine's YAML,
	// never from gpulet's own answer.
	minors, err := profileMinors(n.Cfg.SourceDir, n.Cfg.Machine)
	if err != nil {
		return err
	}
	if err := m.takeMinors(minors); err != nil {
		return err
	}
	n.Machine = m
	// The node's device nodes, /proc and /sys files and driver libraries,
	// the simulator installed as the driver's NVML, all under one root.
	render := exec.Command(n.Cfg.Gpulet, "sim", "render", p.GPURoot(), "--machine", n.Cfg.Machine,
		"--driver-dir", ".", "--sim-lib", n.Cfg.SimLib)
	if out, err := render.CombinedOutput(); err != nil {
		return fmt.Errorf("gpulet sim render: %v: %s", err, out)
	}
	cmd := exec.Command(n.Cfg.Gpulet, "--driver-root", p.GPURoot(), "--nvml-lib", n.Cfg.SimLib,
		"cdi", "generate", "--output", filepath.Join(p.StaticCDI(), "nvidia.com-gpu.yaml"))
	cmd.Env = append(os.Environ(), "GPULET_SIM_MACHINE="+n.Cfg.Machine)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gpulet cdi generate: %v: %s", err, out)
	}
	runc, err := lookPath("runc")
	if err != nil {
		return err
	}
	// The multi-tenant setting (runtime_envvar.go).
	runtimeCfg := fmt.Sprintf("runtime: %s\ndriverRoot: %s\nspecDirs: [%s, %s]\nlogFile: %s\nacceptEnvvarUnprivileged: false\n",
		runc, p.GPURoot(), p.StaticCDI(), DynamicCDIDir, p.RuntimeLog())
	if err := os.MkdirAll(DynamicCDIDir, 0755); err != nil {
		return err
	}
	if err := os.MkdirAll(SimSocketDir, 0755); err != nil {
		return err
	}
	return os.WriteFile(p.RuntimeConfig(), []byte(runtimeCfg), 0644)
}

func lookPath(name string) (string, error) {
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/bin"} {
		if st, err := os.Stat(filepath.Join(d, name)); err == nil && !st.IsDir() {
			return filepath.Join(d, name), nil
		}
	}
	return exec.LookPath(name)
}

// waitFor polls cond until it is true; the deadline only bounds a failure.
func (n *Node) waitFor(parent context.Context, what string, limit time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(parent, limit)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		for _, pr := range n.Procs.Running() {
			select {
			case <-pr.Done():
				return fmt.Errorf("waiting for %s: %s exited (%v); see %s", what, pr.Name, pr.Err(), pr.LogPath)
			default:
			}
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return fmt.Errorf("waiting for %s: interrupted", what)
			}
			return fmt.Errorf("waiting for %s: not after %s", what, limit)
		case <-tick.C:
		}
	}
}

// WaitFor is waitFor for scenarios.
func (n *Node) WaitFor(ctx context.Context, what string, limit time.Duration, cond func(context.Context) (bool, error)) error {
	return n.waitFor(ctx, what, limit, cond)
}

func (n *Node) waitNodeReady(ctx context.Context) error {
	return n.waitFor(ctx, "the node to be Ready without taints", 120*time.Second, func(ctx context.Context) (bool, error) {
		node, err := n.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if len(node.Spec.Taints) > 0 {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// waitServiceAccount waits for the controller manager to create a
// namespace's default ServiceAccount; pods cannot be created before.
func (n *Node) waitServiceAccount(ctx context.Context, namespace string) error {
	return n.waitFor(ctx, "the "+namespace+" namespace's default ServiceAccount", 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := n.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// Kubectl runs kubectl against the cluster (for diagnostics).
func (n *Node) Kubectl(args ...string) string {
	out, _ := exec.Command(n.k8s("kubectl"), append([]string{"--kubeconfig", n.Kubeconfig}, args...)...).CombinedOutput()
	return string(out)
}

// Down brings everything down: the kubelet first (no pod restarts), then
// every container and shim, containerd and the control plane, by PID; then
// every mount under the node's paths. It returns what could not be undone.
func (n *Node) Down() error {
	var errs []string
	// A cut or a stopped API server would hold up every stop below.
	for _, undo := range []func() error{n.RestoreAPIServer, n.ResumeAPIServer} {
		if err := undo(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if n.Kubelet != nil {
		n.Procs.Stop(n.Kubelet, 20*time.Second)
	}
	// Containers and their shims are not the fixture's children: they are
	// reparented to the namespace's init. End them by PID.
	owned := map[int]bool{}
	for _, pr := range n.Procs.Running() {
		owned[pr.Pid()] = true
	}
	for _, pid := range sandbox.OtherPids() {
		if !owned[pid] {
			_ = killPid(pid)
		}
	}
	n.Procs.StopAll(20 * time.Second)
	if n.criRelay != nil {
		n.criRelay.stop()
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(sandbox.OtherPids()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := sandbox.OtherPids(); len(left) > 0 {
		errs = append(errs, fmt.Sprintf("processes still running: %v", left))
	}
	if err := unmountAll(n.Cfg.Paths.State, kubeletDir, cniCacheDir, "/run", "/var/log", usrBin); err != nil {
		errs = append(errs, err.Error())
	}
	for _, d := range n.created {
		// Another test (the kubelet harness) may have put something in it
		// meanwhile; then it is no longer only ours to remove.
		if err := os.Remove(d); err != nil && !errors.Is(err, syscall.ENOTEMPTY) && !os.IsNotExist(err) {
			errs = append(errs, err.Error())
		}
	}
	if err := sandbox.RemoveCgroups(n.Cfg.CgroupName, n.Cfg.Log); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
