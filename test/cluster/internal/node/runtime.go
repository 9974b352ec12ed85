package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// writeContainerdConfig writes containerd's configuration the way an
// operator would: containerd's own default (`containerd config default`)
// with the node's settings put in, then gpulet-runtime added as the default
// runtime by `gpulet runtime configure` (docs/runtime.md). The new runtime
// copies runc's options, so SystemdCgroup stays false: the kubelet here
// uses the cgroupfs driver, there being no systemd.
func (n *Node) writeContainerdConfig(ctx context.Context, path string) error {
	def, err := exec.CommandContext(ctx, "containerd", "config", "default").Output()
	if err != nil {
		return fmt.Errorf("containerd config default: %v", err)
	}
	if !strings.Contains(string(def), fmt.Sprintf("address = %q", ContainerdSocket)) {
		return fmt.Errorf("containerd's default config does not listen on %s", ContainerdSocket)
	}
	text, err := setTOMLValues(string(def), n.containerdSettings())
	if err != nil {
		return fmt.Errorf("containerd's default config: %v", err)
	}
	if err := os.WriteFile(path, []byte(text), 0644); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, n.Cfg.Gpulet, "runtime", "configure",
		"--runtime", "containerd", "--config", path,
		"--runtime-path", RuntimeBinary, "--set-as-default").CombinedOutput()
	if err != nil {
		return fmt.Errorf("gpulet runtime configure: %v: %s", err, out)
	}
	return nil
}

// tomlSetting replaces the value of the one line `key = ...` of a config.
type tomlSetting struct{ key, value string }

// containerdSettings are the node's own: state under the run's directory;
// plugins the node does not use off ("opt" would create /opt/containerd);
// the sandbox image the fixture imports; runc may not lower oom_score_adj
// (root here lacks CAP_SYS_RESOURCE); Debian's CNI plugins and the
// fixture's CNI config.
func (n *Node) containerdSettings() []tomlSetting {
	p := n.Cfg.Paths
	return []tomlSetting{
		{"root", fmt.Sprintf("%q", filepath.Join(p.Containerd(), "root"))},
		{"disabled_plugins", `["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]`},
		{"sandbox_image", fmt.Sprintf("%q", PauseImage)},
		{"restrict_oom_score_adj", "true"},
		{"stream_server_address", `"127.0.0.1"`},
		{"bin_dir", `"/usr/lib/cni"`},
		{"conf_dir", fmt.Sprintf("%q", filepath.Join(p.CNI(), "net.d"))},
	}
}

// setTOMLValues gives each setting's key its value in text, keeping the
// line's indentation. Each key must be on exactly one line of its own, so a
// default that changes shape is an error rather than a silent miss.
func setTOMLValues(text string, settings []tomlSetting) (string, error) {
	for _, s := range settings {
		re := regexp.MustCompile(`(?m)^([ \t]*)` + regexp.QuoteMeta(s.key) + ` = .*$`)
		if n := len(re.FindAllStringIndex(text, -1)); n != 1 {
			return "", fmt.Errorf("%d lines set %s, want exactly 1", n, s.key)
		}
		value := s.value
		text = re.ReplaceAllStringFunc(text, func(line string) string {
			return re.FindStringSubmatch(line)[1] + s.key + " = " + value
		})
	}
	return text, nil
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
	if err := n.writeContainerdConfig(ctx, cfgPath); err != nil {
		return err
	}
	archives, err := buildImages(p.Images(), imageSources{
		srcDir: n.Cfg.SourceDir, gpulet: n.Cfg.Gpulet, runtime: n.Cfg.Runtime, simLib: n.Cfg.SimLib,
		exploitLib: n.Cfg.ExploitLib, exploitMarker: p.ExploitMarker(), tenantAttack: n.Cfg.TenantAttack})
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
%s`, filepath.Join(p.PKI(), "ca.crt"), n.Cfg.CgroupName, n.criEndpoint(), p.PodLogs(), n.kubeletGates())
	if err := os.WriteFile(filepath.Join(p.PKI(), "kubelet-config.yaml"), []byte(text), 0644); err != nil {
		return err
	}
	return nil
}

// criEndpoint is the kubelet's runtime socket: containerd's, or in DRA
// mode the relay that hands it the CDI devices of claims (cri_relay.go).
func (n *Node) criEndpoint() string {
	if n.Cfg.DRA {
		return CRIRelaySocket
	}
	return ContainerdSocket
}

// kubeletGates is the kubelet configuration's featureGates (DRA mode).
func (n *Node) kubeletGates() string {
	if !n.Cfg.DRA {
		return ""
	}
	out := "featureGates:\n"
	for _, g := range strings.Split(DRAFeatureGates, ",") {
		name, value, _ := strings.Cut(g, "=")
		out += "  " + name + ": " + value + "\n"
	}
	return out
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
