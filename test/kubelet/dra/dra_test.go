// Package dra checks `gpulet dra` against the kubelet's own DRA code: the
// plugin manager's watcher and registration handler
// (k8s.io/kubernetes/pkg/kubelet/pluginmanager) and the DRA manager
// (pkg/kubelet/cm/dra), unmodified, driven as the kubelet drives them.
// gpulet reads claims from an HTTPS server backed by the same fake
// clientset the DRA manager reads.
//
// TestGpulet needs GPULET_BIN (the gpulet binary) and GPULET_NVML_LIB (the
// NVML simulator); CTest's kubelet_dra sets both. `go test ./...` in the
// harness's self-test leaves it out (-skip ^TestGpulet$).
package dra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	pluginwatcherapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager"

	"gpulet.dev/test/kubelet/harness"
)

const (
	driver   = "gpu.nvidia.com"
	nodeName = "node-a"
	ns       = "default"
	// Conditions, not durations: each is an upper bound on a wait that
	// ends as soon as the condition holds.
	waitLimit = 60 * time.Second
)

type sourcesReady struct{}

func (sourcesReady) AddSource(string) {}
func (sourcesReady) AllReady() bool   { return true }

// kubelet is the kubelet's DRA side: the plugin manager watching the
// registry directory and the DRA manager it hands DRA plugins to.
type kubelet struct {
	mgr    *dra.Manager
	cancel context.CancelFunc
	done   chan struct{}
}

// activePods is what the kubelet considers running: its reconcile loop
// unprepares the claims of any other pod, so a pod must be listed here for
// as long as the test expects its claims prepared.
type activePods struct {
	mu   sync.Mutex
	pods []*v1.Pod
}

func (a *activePods) get() []*v1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*v1.Pod(nil), a.pods...)
}

func (a *activePods) remove(pod *v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods = slices.DeleteFunc(a.pods, func(p *v1.Pod) bool { return p.UID == pod.UID })
}

func startKubelet(t *testing.T, cs *fake.Clientset, registry, state string, active *activePods) *kubelet {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	mgr, err := dra.NewManager(klog.Background(), cs, state)
	if err != nil {
		cancel()
		t.Fatalf("dra.NewManager: %v", err)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}}
	if err := mgr.Start(ctx, active.get,
		func(context.Context) (*v1.Node, error) { return node, nil }, sourcesReady{}); err != nil {
		cancel()
		t.Fatalf("DRA manager Start: %v", err)
	}
	pm := pluginmanager.NewPluginManager(registry, &record.FakeRecorder{})
	pm.AddHandler(pluginwatcherapi.DRAPlugin, mgr.GetWatcherHandler())
	k := &kubelet{mgr: mgr, cancel: cancel, done: make(chan struct{})}
	stop := make(chan struct{})
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	go func() {
		defer close(k.done)
		pm.Run(ctx, sourcesReady{}, stop)
	}()
	return k
}

func (k *kubelet) stop() {
	k.cancel()
	<-k.done
}

// pod uses claim `claim` through its container.
func newPod(name, claim string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("pod-" + name)},
		Spec: v1.PodSpec{
			NodeName:       nodeName,
			ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}},
			Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
				Claims: []v1.ResourceClaim{{Name: "gpu"}}}}},
		},
	}
}

// newClaim is allocated `devices` of our pool and reserved for `pod`.
func newClaim(name string, pod *v1.Pod, devices ...string) *resourceapi.ResourceClaim {
	var results []resourceapi.DeviceRequestAllocationResult
	for _, d := range devices {
		results = append(results, resourceapi.DeviceRequestAllocationResult{
			Request: "gpu", Driver: driver, Pool: nodeName, Device: d})
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu"}}}},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}},
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{
				{Resource: "pods", Name: pod.Name, UID: pod.UID}},
		},
	}
}

// newShareClaim is allocated shares of `device` (DRAConsumableCapacity), one
// per entry of `memory` (the consumed amount), as the scheduler writes them.
func newShareClaim(name string, pod *v1.Pod, device string, memory ...string) *resourceapi.ResourceClaim {
	claim := newClaim(name, pod)
	for i, m := range memory {
		share := types.UID(fmt.Sprintf("5f3b7f3e-8c2a-4d43-9a51-0c6f2d1e7a1%d", i))
		claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{
				Request: "gpu", Driver: driver, Pool: nodeName, Device: device, ShareID: &share,
				ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{
					"memory": resource.MustParse(m)}})
	}
	return claim
}

// withSharing gives `claim` NVIDIA's GpuConfig with `sharing` (JSON) as
// its opaque configuration.
func withSharing(claim *resourceapi.ResourceClaim, sharing string) *resourceapi.ResourceClaim {
	params := fmt.Sprintf(`{"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": %s}`, sharing)
	claim.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{
		Source: resourceapi.AllocationConfigSourceClaim,
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(params)}}},
	}}
	return claim
}

// checkSharing prepares and unprepares `ts` (a claim configured for
// time-slicing) and `mps` (one configured for MPS): the GPU's time-slice is
// set through the driver's nvidia-smi (`smiLog`, what the simulator's
// records) and set back on unprepare; the MPS claim gets a control daemon
// of its own (`mpsDir`), told to quit on unprepare.
func checkSharing(t *testing.T, mgr *dra.Manager, active *activePods, ts, mps *v1.Pod, smiLog, mpsDir string) {
	t.Helper()
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
	prepareOnceRegistered(t, mgr, ts)
	if log := read(smiLog); !strings.Contains(log, "--set-timeslice=2") {
		t.Fatalf("nvidia-smi after preparing a Medium time-slice:\n%s", log)
	}
	prepareOnceRegistered(t, mgr, mps)
	control := filepath.Join(mpsDir, "pipe", "control")
	err := harness.Wait(waitLimit, "the claim's MPS daemon listening", func() (bool, string, error) {
		_, err := os.Stat(control)
		return err == nil, read(filepath.Join(mpsDir, "log", "control.log")), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Unprepare removes the claim's whole MPS directory (pipe, log and its
	// own /dev/shm): the daemon's log is read through a descriptor opened
	// before.
	logFile, err := os.Open(filepath.Join(mpsDir, "log", "control.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	active.remove(mps)
	if err := mgr.UnprepareResources(context.Background(), mps); err != nil {
		t.Fatalf("UnprepareResources(%s): %v", mps.Name, err)
	}
	if log, _ := io.ReadAll(logFile); !strings.Contains(string(log), "command quit") {
		t.Fatalf("the claim's MPS daemon was not told to quit:\n%s", log)
	}
	if _, err := os.Stat(mpsDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the claim's MPS directory %s after unprepare: %v (want gone)", mpsDir, err)
	}
	active.remove(ts)
	if err := mgr.UnprepareResources(context.Background(), ts); err != nil {
		t.Fatalf("UnprepareResources(%s): %v", ts.Name, err)
	}
	if log := read(smiLog); !strings.HasSuffix(log, "--set-timeslice=0\n") {
		t.Fatalf("nvidia-smi after unpreparing the time-sliced claim:\n%s", log)
	}
}

// expectDeviceNodes checks a claim's CDI spec: each CDI device (by name)
// has exactly the device nodes of want (their paths in the container).
func expectDeviceNodes(t *testing.T, specPath string, want map[string][]string) {
	t.Helper()
	b, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatalf("claim spec: %v", err)
	}
	var spec struct {
		Devices []struct {
			Name           string `json:"name"`
			ContainerEdits struct {
				DeviceNodes []struct {
					Path string `json:"path"`
				} `json:"deviceNodes"`
			} `json:"containerEdits"`
		} `json:"devices"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatalf("%s: %v", specPath, err)
	}
	got := map[string][]string{}
	for _, d := range spec.Devices {
		got[d.Name] = []string{}
		for _, n := range d.ContainerEdits.DeviceNodes {
			got[d.Name] = append(got[d.Name], n.Path)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: device nodes %v, want %v", specPath, got, want)
	}
}

func cdiDevices(t *testing.T, mgr *dra.Manager, pod *v1.Pod) []string {
	t.Helper()
	info, err := mgr.GetResources(pod, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatalf("GetResources: %v", err)
	}
	// Unique and sorted: after a restart from its checkpoint the v1.36.3
	// DRA manager lists a claim's CDI devices twice (harmless: the runtime
	// injects each device once).
	seen := map[string]bool{}
	var out []string
	for _, d := range info.CDIDevices {
		if !seen[d.Name] {
			seen[d.Name] = true
			out = append(out, d.Name)
		}
	}
	sort.Strings(out)
	return out
}

// prepareOnceRegistered retries PrepareResources until gpulet is
// registered with this kubelet (before that the manager says the driver is
// unknown); any other error fails.
func prepareOnceRegistered(t *testing.T, mgr *dra.Manager, pod *v1.Pod) {
	t.Helper()
	err := harness.Wait(waitLimit, "gpulet registered and claim prepared", func() (bool, string, error) {
		err := mgr.PrepareResources(context.Background(), pod)
		if err == nil {
			return true, "", nil
		}
		return false, err.Error(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGpulet(t *testing.T) {
	bin, lib := os.Getenv("GPULET_BIN"), os.Getenv("GPULET_NVML_LIB")
	if bin == "" || lib == "" {
		t.Fatal("GPULET_BIN and GPULET_NVML_LIB must name gpulet and the NVML simulator")
	}
	dir, err := os.MkdirTemp("", "dra-kt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	registry, plugins := filepath.Join(dir, "reg"), filepath.Join(dir, "plug")
	state, cdi := filepath.Join(dir, "kubelet"), filepath.Join(dir, "cdi")
	for _, d := range []string{registry, plugins, state, cdi} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// The simulated node's files: its driver root has the nvidia-smi and
	// nvidia-cuda-mps-control stand-ins that record what gpulet asks.
	node := filepath.Join(dir, "node")
	if out, err := exec.Command(bin, "sim", "render", "--dev-nodes", "files", node).CombinedOutput(); err != nil {
		t.Fatalf("gpulet sim render: %v: %s", err, out)
	}
	mps := filepath.Join(dir, "mps")

	podA, podB, podC := newPod("a", "claim-a"), newPod("b", "claim-b"), newPod("c", "claim-c")
	podD, podE := newPod("d", "claim-d"), newPod("e", "claim-e")
	active := &activePods{pods: []*v1.Pod{podA, podB, podC, podD, podE}}
	cs := fake.NewClientset(newClaim("claim-a", podA, "gpu-0", "gpu-1"), newClaim("claim-b", podB, "gpu-2"),
		newShareClaim("claim-c", podC, "gpu-3", "4Gi", "2Gi"),
		withSharing(newClaim("claim-d", podD, "gpu-4"), `{"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Medium"}}`),
		withSharing(newClaim("claim-e", podE, "gpu-5"), `{"strategy": "MPS"}`))
	api := startClaimServer(t, cs)
	argv := []string{bin, "--nvml-lib", lib, "--driver-root", filepath.Join(node, "driver"), "dra",
		"--node-name", nodeName, "--dev-root", node, "--mps-root", mps,
		"--kubeconfig", api.kubeconfig(t, dir), "--registry-dir", registry,
		"--plugin-dir", plugins, "--cdi-dir", cdi}
	simSocket := filepath.Join(dir, "sim.sock")
	plugin, err := harness.StartPlugin(argv, []string{"GPULET_SIM_SOCKET=" + simSocket}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if plugin.Running() {
			_ = plugin.Stop(10 * time.Second)
		}
		if t.Failed() {
			t.Logf("gpulet output:\n%s", plugin.Output.Tail(200))
		}
	})

	// Registration through the plugin watcher, then prepare.
	k := startKubelet(t, cs, registry, state, active)
	prepareOnceRegistered(t, k.mgr, podA)
	want := []string{"k8s.gpu.nvidia.com/claim=uid-claim-a-gpu-0", "k8s.gpu.nvidia.com/claim=uid-claim-a-gpu-1"}
	if got := cdiDevices(t, k.mgr, podA); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("CDI devices of pod a: got %v, want %v", got, want)
	}
	t.Logf("gpulet dra resident memory after a prepare: %s", vmRSS(plugin.Pid()))
	specA := filepath.Join(cdi, "k8s.gpu.nvidia.com-claim_uid-claim-a.json")
	// dgx-h100's minors are not its indexes (sim/profiles/dgx-h100.yaml):
	// gpu-0 is /dev/nvidia2, gpu-1 /dev/nvidia3.
	expectDeviceNodes(t, specA, map[string][]string{
		"uid-claim-a-gpu-0": {"/dev/nvidia2"}, "uid-claim-a-gpu-1": {"/dev/nvidia3"}})

	// Health: an Xid 79 on GPU 1 reaches the kubelet through
	// NodeWatchResources and shows in the pod's status; GPU 0 stays healthy.
	if out, err := exec.Command(bin, "sim", "--socket", simSocket, "xid", "--gpu", "1", "--xid", "79").CombinedOutput(); err != nil {
		t.Fatalf("inject Xid: %v: %s", err, out)
	}
	err = harness.Wait(waitLimit, "gpu-1 unhealthy in pod a's status", func() (bool, string, error) {
		health := deviceHealth(k.mgr, podA)
		return health["gpu-1"] == v1.ResourceHealthStatusUnhealthy &&
			health["gpu-0"] == v1.ResourceHealthStatusHealthy, fmt.Sprint(health), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Kubelet restart with its state: it registers gpulet again and knows
	// the claim is prepared.
	k.stop()
	k = startKubelet(t, cs, registry, state, active)
	prepareOnceRegistered(t, k.mgr, podA)
	if got := cdiDevices(t, k.mgr, podA); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after kubelet restart: got %v, want %v", got, want)
	}
	// A kubelet that lost its state asks gpulet again: answered from
	// gpulet's checkpoint, the claim is not read (nor prepared) twice.
	k.stop()
	k = startKubelet(t, cs, registry, filepath.Join(dir, "kubelet2"), active)
	prepareOnceRegistered(t, k.mgr, podA)
	if got := cdiDevices(t, k.mgr, podA); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after kubelet state loss: got %v, want %v", got, want)
	}
	if n := api.Gets(ns, "claim-a"); n != 1 {
		t.Fatalf("gpulet read claim-a %d times; want 1 (answered from its checkpoint after)", n)
	}

	// Plugin crash and restart: the checkpoint survives, registration
	// comes back, a new claim prepares and the old one unprepares.
	plugin.Kill()
	if err := plugin.Restart(); err != nil {
		t.Fatal(err)
	}
	prepareOnceRegistered(t, k.mgr, podB)
	if got := cdiDevices(t, k.mgr, podB); fmt.Sprint(got) != "[k8s.gpu.nvidia.com/claim=uid-claim-b-gpu-2]" {
		t.Fatalf("pod b after plugin restart: got %v", got)
	}
	expectDeviceNodes(t, filepath.Join(cdi, "k8s.gpu.nvidia.com-claim_uid-claim-b.json"),
		map[string][]string{"uid-claim-b-gpu-2": {"/dev/nvidia0"}})
	// Two memory shares of gpu-3 in one claim: a CDI device each, with its
	// limit in MiB.
	prepareOnceRegistered(t, k.mgr, podC)
	wantC := []string{"k8s.gpu.nvidia.com/claim=uid-claim-c-gpu-3-5f3b7f3e-8c2a-4d43-9a51-0c6f2d1e7a10",
		"k8s.gpu.nvidia.com/claim=uid-claim-c-gpu-3-5f3b7f3e-8c2a-4d43-9a51-0c6f2d1e7a11"}
	if got := cdiDevices(t, k.mgr, podC); fmt.Sprint(got) != fmt.Sprint(wantC) {
		t.Fatalf("pod c's shares: got %v, want %v", got, wantC)
	}
	specC, err := os.ReadFile(filepath.Join(cdi, "k8s.gpu.nvidia.com-claim_uid-claim-c.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []string{"GPULET_GPU_MEMORY_LIMIT=4096", "GPULET_GPU_MEMORY_LIMIT=2048"} {
		if !strings.Contains(string(specC), limit) {
			t.Fatalf("claim-c's spec lacks %s:\n%s", limit, specC)
		}
	}
	active.remove(podC)
	if err := k.mgr.UnprepareResources(context.Background(), podC); err != nil {
		t.Fatalf("UnprepareResources(c): %v", err)
	}
	checkSharing(t, k.mgr, active, podD, podE, filepath.Join(node, "driver", "usr", "bin", "nvidia-smi.log"),
		filepath.Join(mps, "claim-uid-claim-e"))
	active.remove(podA)
	if err := k.mgr.UnprepareResources(context.Background(), podA); err != nil {
		t.Fatalf("UnprepareResources(a): %v", err)
	}
	if _, err := os.Stat(specA); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("claim-a's spec after unprepare: %v (want gone)", err)
	}
	active.remove(podB)
	if err := k.mgr.UnprepareResources(context.Background(), podB); err != nil {
		t.Fatalf("UnprepareResources(b): %v", err)
	}
	k.stop()
	if err := plugin.Stop(10 * time.Second); err != nil && !errors.Is(err, syscall.ECHILD) {
		t.Logf("gpulet stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(registry, driver+"-reg.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("registration socket left after stop: %v", err)
	}
}

// vmRSS is the VmRSS line of /proc/<pid>/status ("41234 kB"), for the log.
func vmRSS(pid int) string {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return "unknown"
}

// deviceHealth is the health the kubelet would put in the pod's status
// (allocatedResourcesStatus), by DRA device name: the resource ID is the
// device's CDI ID, "k8s.gpu.nvidia.com/claim=<claim uid>-<device>".
func deviceHealth(mgr *dra.Manager, pod *v1.Pod) map[string]v1.ResourceHealthStatus {
	status := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: pod.Spec.Containers[0].Name}}}
	mgr.UpdateAllocatedResourcesStatus(pod, status)
	out := map[string]v1.ResourceHealthStatus{}
	for _, rs := range status.ContainerStatuses[0].AllocatedResourcesStatus {
		for _, r := range rs.Resources {
			id := string(r.ResourceID)
			if i := strings.Index(id, "-gpu-"); i >= 0 {
				id = id[i+1:]
			}
			out[id] = r.Health
		}
	}
	return out
}
