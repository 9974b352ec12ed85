package harness

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
)

// Pods is the set of pods the kubelet considers active. It outlives Kubelet
// instances, like pods outlive a kubelet restart. Safe for concurrent use
// (the device manager calls Active from its own goroutines).
type Pods struct {
	mu   sync.Mutex
	pods map[types.UID]*v1.Pod
}

// NewPods returns an empty pod set.
func NewPods() *Pods { return &Pods{pods: map[types.UID]*v1.Pod{}} }

// Active lists the active pods (devicemanager.ActivePodsFunc).
func (p *Pods) Active() []*v1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*v1.Pod, 0, len(p.pods))
	for _, pod := range p.pods {
		out = append(out, pod)
	}
	return out
}

func (p *Pods) add(pod *v1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods[pod.UID] = pod
}

// Delete makes a pod inactive; the kubelet frees its devices at the next allocation.
func (p *Pods) Delete(pod *v1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pods, pod.UID)
}

// NewPod returns a pod with one container named "main" whose limits ask for
// count devices of resourceName (the kubelet reads limits for extended resources).
func NewPod(name, resourceName string, count int) *v1.Pod {
	qty := *resource.NewQuantity(int64(count), resource.DecimalSI)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "main",
			Resources: v1.ResourceRequirements{
				Limits:   v1.ResourceList{v1.ResourceName(resourceName): qty},
				Requests: v1.ResourceList{v1.ResourceName(resourceName): qty},
			},
		}}},
	}
}

// RunOptions is what the container runtime gets for one container: the
// merged AllocateResponse contents, plus the device IDs the kubelet chose.
type RunOptions struct {
	DeviceIDs   map[string][]string // resource name -> sorted device IDs
	Envs        map[string]string
	Mounts      []string // "host -> container (ro|rw)"
	Devices     []string // "host -> container (perms)"
	Annotations map[string]string
	CDIDevices  []string
}

func convertRunOptions(o *devicemanager.DeviceRunContainerOptions, devs devicemanager.ResourceDeviceInstances) *RunOptions {
	out := &RunOptions{DeviceIDs: map[string][]string{}, Envs: map[string]string{}, Annotations: map[string]string{}}
	for res, instances := range devs {
		for id := range instances {
			out.DeviceIDs[res] = append(out.DeviceIDs[res], id)
		}
		sort.Strings(out.DeviceIDs[res])
	}
	if o == nil {
		return out
	}
	for _, e := range o.Envs {
		out.Envs[e.Name] = e.Value
	}
	for _, a := range o.Annotations {
		out.Annotations[a.Name] = a.Value
	}
	for _, m := range o.Mounts {
		out.Mounts = append(out.Mounts, describeMount(m))
	}
	for _, d := range o.Devices {
		out.Devices = append(out.Devices, fmt.Sprintf("%s -> %s (%s)", d.PathOnHost, d.PathInContainer, d.Permissions))
	}
	for _, c := range o.CDIDevices {
		out.CDIDevices = append(out.CDIDevices, c.Name)
	}
	return out
}

func describeMount(m kubecontainer.Mount) string {
	mode := "rw"
	if m.ReadOnly {
		mode = "ro"
	}
	return fmt.Sprintf("%s -> %s (%s)", m.HostPath, m.ContainerPath, mode)
}

// String renders the options as indented lines for people.
func (o *RunOptions) String() string {
	var b strings.Builder
	for _, res := range sortedKeys(o.DeviceIDs) {
		fmt.Fprintf(&b, "  devices chosen by the kubelet for %s: %s\n", res, strings.Join(o.DeviceIDs[res], ", "))
	}
	writeMap(&b, "environment variables", o.Envs)
	writeList(&b, "mounts", o.Mounts)
	writeList(&b, "device nodes", o.Devices)
	writeMap(&b, "annotations", o.Annotations)
	writeList(&b, "CDI devices", o.CDIDevices)
	return b.String()
}

func writeMap(b *strings.Builder, title string, m map[string]string) {
	if len(m) == 0 {
		fmt.Fprintf(b, "  %s: none\n", title)
		return
	}
	fmt.Fprintf(b, "  %s:\n", title)
	for _, k := range sortedKeys(m) {
		fmt.Fprintf(b, "    %s=%s\n", k, m[k])
	}
}

func writeList(b *strings.Builder, title string, l []string) {
	if len(l) == 0 {
		fmt.Fprintf(b, "  %s: none\n", title)
		return
	}
	fmt.Fprintf(b, "  %s:\n", title)
	for _, v := range l {
		fmt.Fprintf(b, "    %s\n", v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
