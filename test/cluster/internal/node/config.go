package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Addresses inside the fixture's network namespace. Nothing outside it is
// ever contacted.
const (
	NodeIP        = "10.201.0.1"
	nodePeerIP    = "10.201.0.2"
	ServiceCIDR   = "10.202.0.0/24"
	serviceIP     = "10.202.0.1"
	PodCIDR       = "10.203.0.0/24"
	NodeName      = "gpulet-node"
	apiServerPort = 6443
)

// Paths of the node, inside the fixture's mount namespace.
type Paths struct {
	State string // everything the run writes; kept after a failed run for debugging
}

func (p Paths) Logs() string          { return filepath.Join(p.State, "logs") }
func (p Paths) PKI() string           { return filepath.Join(p.State, "pki") }
func (p Paths) Etcd() string          { return filepath.Join(p.State, "etcd") }
func (p Paths) Containerd() string    { return filepath.Join(p.State, "containerd") }
func (p Paths) Kubelet() string       { return filepath.Join(p.State, "kubelet") }
func (p Paths) PodLogs() string       { return filepath.Join(p.State, "pod-logs") }
func (p Paths) CNI() string           { return filepath.Join(p.State, "cni") }
func (p Paths) CNICache() string      { return filepath.Join(p.State, "cni-cache") }
func (p Paths) GPURoot() string       { return filepath.Join(p.State, "gpu-root") }
func (p Paths) StaticCDI() string     { return filepath.Join(p.State, "cdi") }
func (p Paths) Images() string        { return filepath.Join(p.State, "images") }
func (p Paths) RuntimeConfig() string { return filepath.Join(p.State, "runtime.yaml") }
func (p Paths) RuntimeLog() string    { return filepath.Join(p.State, "logs", "gpulet-runtime.log") }

// ExploitMarker is where the exploit image's library records every process
// outside the container that loaded it: a node path no container has.
func (p Paths) ExploitMarker() string { return filepath.Join(p.State, "exploit-ldpreload.marker") }

// MpsRoot is gpulet's flags.mpsRoot where a scenario shares GPUs with MPS:
// mounted into gpulet's container at the same path, as docs/sharing.md
// asks, so the kubelet mounts the daemons' directories into containers.
func (p Paths) MpsRoot() string { return filepath.Join(p.State, "mps") }

// Fixed paths the node's software uses: private to the fixture's mount
// namespace (a tmpfs or a bind mount of a state directory is put there).
const (
	ContainerdSocket = "/run/containerd/containerd.sock"
	DynamicCDIDir    = "/var/run/cdi"
	// SimSocketDir is where the NVML simulator inside gpulet's pod listens
	// (a hostPath volume the fixture adds to the DaemonSet).
	SimSocketDir = "/run/gpulet-sim"
	SimSocket    = SimSocketDir + "/nvml.sock"
	kubeletDir   = "/var/lib/kubelet"
	cniCacheDir  = "/var/lib/cni"
	usrBin       = "/usr/bin"
	// RuntimeBinary is where gpulet-runtime is installed on the node.
	RuntimeBinary = usrBin + "/gpulet-runtime"
)

// Config is what the fixture is given.
type Config struct {
	Paths      Paths
	K8sBin     string // kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl
	Gpulet     string // build/bin/gpulet
	Runtime    string // build/bin/gpulet-runtime
	SimLib     string // build/sim/lib/libnvidia-ml.so.1
	ExploitLib string // build/test/cluster/ldpreload_marker.so (the exploit image's /poc.so)
	// TenantAttack: build/bin/gpulet-tenant-attack (static), the tenant-attack image's program.
	TenantAttack string
	Helm         string // build/bin/gpulet-helm (Helm's install and uninstall)
	SourceDir    string // the checkout (deploy/ is read from here)
	Machine      string // simulator machine: profile name or file
	CgroupName   string // the kubelet's cgroup root
	// DRA: the node runs gpulet dra (deploy/dra/) instead of the device
	// plugin, with DRAFeatureGates on and the kubelet behind the CRI relay.
	DRA bool
	Log func(format string, args ...any)
}

func (c *Config) check() error {
	var missing []string
	for _, f := range []string{c.Gpulet, c.Runtime, c.SimLib, c.ExploitLib, c.TenantAttack, c.Helm,
		filepath.Join(c.K8sBin, "kube-apiserver"), filepath.Join(c.K8sBin, "kubelet"),
		filepath.Join(c.SourceDir, "deploy/daemonset.yaml"), filepath.Join(c.SourceDir, "deploy/chart/Chart.yaml")} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	for _, b := range []string{"etcd", "containerd", "containerd-shim-runc-v2", "ctr", "runc"} {
		if _, err := lookPath(b); err != nil {
			missing = append(missing, b+" (in PATH)")
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		missing = append(missing, "/usr/lib/cni/bridge (containernetworking-plugins)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing: %s (run scripts/bootstrap and test/cluster/build-k8s)", strings.Join(missing, ", "))
	}
	return nil
}

// APIServerURL is the API server as pods reach it: at the node's address.
var APIServerURL = fmt.Sprintf("https://%s:%d", NodeIP, apiServerPort)
