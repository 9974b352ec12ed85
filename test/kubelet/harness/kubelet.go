package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync/atomic"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"

	"gpulet.dev/test/kubelet/internal/mountns"
)

// Kubelet is one "life" of the kubelet's device manager: NewManagerImpl +
// Start, exactly as the kubelet's container manager does it. Restarting the
// kubelet means Stop and StartKubelet again with the same Pods, which is what
// a real restart looks like to the plugin: kubelet.sock disappears, every
// other socket in the directory is deleted, kubelet.sock comes back, and the
// allocation checkpoint is read back.
type Kubelet struct {
	mgr       *devicemanager.ManagerImpl
	pods      *Pods
	numaNodes []int
	// The device manager panicked (PanicError) and may hold its lock for
	// good: it is never called again, not even to stop it, as nothing of a
	// crashed kubelet runs on.
	crashed atomic.Bool
}

// PanicError is a panic of the kubelet's own device manager code while it
// admitted a pod. Kubernetes v1.36's device manager panics, for one, when a
// device it chose leaves the plugin's list while its Allocate call is in
// flight (allocateContainerResources reads the device's topology without
// checking that it is still listed, with the manager's lock held). A real
// kubelet exits on it and is restarted by its supervisor.
type PanicError struct {
	Pod   string
	Value any
	Stack string
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("the kubelet's device manager panicked admitting pod %s: %v", e.Pod, e.Value)
}

type sourcesReady struct{}

func (sourcesReady) AddSource(string) {}
func (sourcesReady) AllReady() bool   { return true }

// DefaultNUMANodes is the machine topology the harness gives the device
// manager unless told otherwise. The kubelet ignores device NUMA IDs that are
// not among the machine's nodes (which it gets from cAdvisor), and only uses
// nodes that carry devices, so a generous list is harmless.
var DefaultNUMANodes = []int{0, 1, 2, 3, 4, 5, 6, 7}

// StartKubelet creates and starts a device manager whose active pods are pods,
// on a machine with the given NUMA nodes (nil: DefaultNUMANodes). It refuses
// to run outside the private mount namespace so it can never delete a real
// kubelet's sockets.
func StartKubelet(pods *Pods, numaNodes []int) (*Kubelet, error) {
	if !mountns.Inside() {
		return nil, errors.New("refusing to start the kubelet device manager outside the " +
			"private mount namespace (call mountns.Enter first)")
	}
	ensureMetrics()
	if numaNodes == nil {
		numaNodes = DefaultNUMANodes
	}
	var machine []cadvisorapi.Node
	for _, n := range numaNodes {
		machine = append(machine, cadvisorapi.Node{Id: n})
	}
	mgr, err := devicemanager.NewManagerImpl(machine, topologymanager.NewFakeManager())
	if err != nil {
		return nil, fmt.Errorf("devicemanager.NewManagerImpl: %w", err)
	}
	err = mgr.Start(klog.Background(), pods.Active, sourcesReady{},
		containermap.NewContainerMap(), sets.New[string]())
	if err != nil {
		return nil, fmt.Errorf("device manager Start: %w", err)
	}
	return &Kubelet{mgr: mgr, pods: pods, numaNodes: numaNodes}, nil
}

// Restart stops this device manager and starts a new one on the same pods
// and machine, as a kubelet restart does.
func (k *Kubelet) Restart() (*Kubelet, error) {
	if err := k.Stop(); err != nil {
		return nil, fmt.Errorf("stopping the device manager: %w", err)
	}
	return StartKubelet(k.pods, k.numaNodes)
}

// Stop stops the device manager: plugin connections are closed and
// kubelet.sock is removed. Safe to call more than once.
// After a PanicError it does nothing: the crashed manager's lock may be held
// for good (its goroutines stay blocked; the new manager of a Restart
// replaces its sockets, as a restarted kubelet does).
func (k *Kubelet) Stop() error {
	if k.crashed.Load() {
		return nil
	}
	return k.mgr.Stop(klog.Background())
}

// Manager exposes the device manager for checks the harness does not wrap.
func (k *Kubelet) Manager() *devicemanager.ManagerImpl { return k.mgr }

// Resource is what the kubelet would put in the node status for one resource.
type Resource struct {
	Capacity    int64 // every device the plugin listed, healthy or not
	Allocatable int64 // healthy devices only
}

// Resources calls GetCapacity, as the kubelet does on every node status update.
func (k *Kubelet) Resources() map[string]Resource {
	capacity, allocatable, _ := k.mgr.GetCapacity()
	out := map[string]Resource{}
	for name, q := range capacity {
		r := out[string(name)]
		r.Capacity = q.Value()
		out[string(name)] = r
	}
	for name, q := range allocatable {
		r := out[string(name)]
		r.Allocatable = q.Value()
		out[string(name)] = r
	}
	return out
}

// Device is a device as the kubelet knows it from ListAndWatch.
type Device struct {
	ID        string
	NUMANodes []int64
}

// HealthyDevices returns the healthy devices of a resource, sorted by ID.
func (k *Kubelet) HealthyDevices(resource string) []Device {
	var out []Device
	for id, d := range k.mgr.GetAllocatableDevices()[resource] {
		dev := Device{ID: id}
		if d.Topology != nil {
			for _, n := range d.Topology.Nodes {
				dev.NUMANodes = append(dev.NUMANodes, n.ID)
			}
		}
		out = append(out, dev)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Admit runs the kubelet's admission for every container of pod (init
// containers first, as the kubelet does): Allocate picks devices, asks the
// plugin for a preferred allocation and calls its Allocate. On success the pod
// becomes active and the run options the container runtime would receive are
// returned per container. On failure the pod is deleted again.
//
// A panic of the device manager is returned as a *PanicError: the kubelet
// process would exit and be restarted, and this manager may hold its lock
// for good, so the caller must Restart it.
func (k *Kubelet) Admit(pod *v1.Pod) (opts map[string]*RunOptions, err error) {
	// The kubelet counts a pod as active while admitting it (it is already in
	// its pod manager), so allocations of earlier containers are not collected.
	k.pods.add(pod)
	defer func() {
		if r := recover(); r != nil {
			k.crashed.Store(true)
			k.pods.Delete(pod)
			opts, err = nil, &PanicError{Pod: pod.Name, Value: r, Stack: string(debug.Stack())}
		}
	}()
	containers := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i := range containers {
		if err := k.mgr.Allocate(pod, &containers[i]); err != nil {
			k.pods.Delete(pod)
			return nil, fmt.Errorf("kubelet rejected pod %s container %s: %w", pod.Name, containers[i].Name, err)
		}
	}
	return k.RunOptions(pod)
}

// RunOptions returns what the container runtime would be given for each
// container of an admitted pod (GetDeviceRunContainerOptions, which also
// calls PreStartContainer when the plugin asked for it).
func (k *Kubelet) RunOptions(pod *v1.Pod) (map[string]*RunOptions, error) {
	out := map[string]*RunOptions{}
	containers := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i := range containers {
		c := &containers[i]
		opts, err := k.mgr.GetDeviceRunContainerOptions(context.Background(), pod, c)
		if err != nil {
			return nil, fmt.Errorf("GetDeviceRunContainerOptions for pod %s container %s: %w", pod.Name, c.Name, err)
		}
		out[c.Name] = convertRunOptions(opts, k.mgr.GetDevices(string(pod.UID), c.Name))
	}
	return out, nil
}

// TopologyHints returns the NUMA hints the device manager would give the
// topology manager for a container, per resource.
func (k *Kubelet) TopologyHints(pod *v1.Pod, container *v1.Container) map[string][]topologymanager.TopologyHint {
	return k.mgr.GetTopologyHints(pod, container)
}

// ResetDir empties the private device plugin directory, including the
// allocation checkpoint, so scenarios do not see each other's state.
func ResetDir() error {
	if !mountns.Inside() {
		return errors.New("refusing to empty " + mountns.Dir + " outside the private mount namespace")
	}
	entries, err := os.ReadDir(mountns.Dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(mountns.Dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
