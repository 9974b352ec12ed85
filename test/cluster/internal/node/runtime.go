package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// containerdConfig is containerd 1.6's config: the CRI plugin with
// gpulet-runtime as the default runtime exactly as docs/runtime.md shows
// (but SystemdCgroup is false: the kubelet here uses the cgroupfs driver,
// there being no systemd).
func (n *Node) containerdConfig() string {
	p := n.Cfg.Paths
	return fmt.Sprintf(`version = 2
root = %q
state = "/run/containerd"
# Plugins this node does not use; "opt" would create /opt/containerd.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # Root here lacks CAP_SYS_RESOURCE: runc may not lower oom_score_adj.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = %q

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "gpulet"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpulet]
  runtime_type = "io.containerd.runc.v2"
  container_annotations = ["cdi.k8s.io/*"]

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpulet.options]
  BinaryName = %q
  SystemdCgroup = false
`, filepath.Join(p.Containerd(), "root"), ContainerdSocket, PauseImage,
		filepath.Join(p.CNI(), "net.d"), RuntimeBinary)
}

// cniConfig: a bridge in the node's network namespace, host-local
// addresses from PodCIDR, no masquerading (nothing is routed out). Pods
// reach the node's own address through the bridge (a host route to it, no
// default route), as gpulet's pod reaches the API server there.
func (n *Node) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "gpulet",
  "plugins": [{
    "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]],
             "routes": [{"dst": %q}], "dataDir": %q}
  }]
}
`, PodCIDR, NodeIP+"/32", filepath.Join(n.Cfg.Paths.CNI(), "ipam"))
}

func (n *Node) startContainerd(ctx context.Context) error {
	p := n.Cfg.Paths
	if err := os.MkdirAll(filepath.Join(p.CNI(), "net.d"), 0755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.CNI(), "net.d", "10-gpulet.conflist"), []byte(n.cniConfig()), 0644); err != nil {
		return err
	}
	cfgPath := filepath.Join(p.Containerd(), "config.toml")
	if err := os.WriteFile(cfgPath, []byte(n.containerdConfig()), 0644); err != nil {
		return err
	}
	archives, err := buildImages(p.Images(), n.Cfg.SourceDir, n.Cfg.Gpulet, n.Cfg.Runtime)
	if err != nil {
		return err
	}
	// gpulet-runtime finds its config through the environment containerd
	// passes on to the shim and so to the runtime.
	n.Containerd, err = n.Procs.Start("containerd", []string{"GPULET_RUNTIME_CONFIG=" + p.RuntimeConfig()},
		"containerd", "--config", cfgPath)
	if err != nil {
		return err
	}
	if err := n.waitFor(ctx, "containerd's socket", 60*time.Second, func(context.Context) (bool, error) {
		c, err := net.Dial("unix", ContainerdSocket)
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	}); err != nil {
		return err
	}
	for _, a := range archives {
		out, err := exec.CommandContext(ctx, "ctr", "--address", ContainerdSocket, "-n", "k8s.io",
			"images", "import", "--no-unpack", a).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ctr images import %s: %v: %s", a, err, out)
		}
	}
	return nil
}

func (n *Node) writeKubeletConfig(kubeconfig string) error {
	p := n.Cfg.Paths
	text := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %q}
authorization: {mode: AlwaysAllow}
# No systemd here (cgroupfs), cgroup v1 hosts, no swap accounting.
cgroupDriver: cgroupfs
cgroupRoot: /%s
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
podLogsDir: %q
resolvConf: ""
healthzBindAddress: 127.0.0.1
# A ConfigMap edit reaches a pod's volume only at the pod's next periodic
# sync (every syncFrequency, 1m by default; the ConfigMap itself is watched).
# The reload scenarios wait for the new file in gpulet's container before
# sending SIGHUP, as an operator does; 2s keeps that wait short.
syncFrequency: 2s
# Device plugin changes reach the API server at the next status update.
nodeStatusUpdateFrequency: 1s
nodeStatusReportFrequency: 1s
# The test machine's disk and memory are shared: never evict for pressure.
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
`, filepath.Join(p.PKI(), "ca.crt"), n.Cfg.CgroupName, ContainerdSocket, p.PodLogs())
	if err := os.WriteFile(filepath.Join(p.PKI(), "kubelet-config.yaml"), []byte(text), 0644); err != nil {
		return err
	}
	return nil
}

// StartKubelet starts (or restarts) the kubelet.
func (n *Node) StartKubelet() error {
	p := n.Cfg.Paths
	var err error
	n.Kubelet, err = n.Procs.Start("kubelet", nil, n.k8s("kubelet"),
		"--config", filepath.Join(p.PKI(), "kubelet-config.yaml"),
		"--kubeconfig", filepath.Join(p.PKI(), "kubelet.kubeconfig"),
		"--hostname-override", NodeName,
		"--node-ip", NodeIP,
		"--node-labels", "nvidia.com/gpu.present=true",
		"--v=1")
	return err
}

// StopKubelet stops the kubelet (SIGTERM), leaving its pods running.
func (n *Node) StopKubelet() {
	if n.Kubelet != nil {
		n.Procs.Stop(n.Kubelet, 20*time.Second)
		n.Kubelet = nil
	}
}
