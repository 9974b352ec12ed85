package soak

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"gpulet.dev/test/kubelet/harness"
)

const visibleDevices = "NVIDIA_VISIBLE_DEVICES"

// node is the kubelet side: the device manager (one per kubelet life), the
// active pods, and the soak's own record of what each running pod holds.
// mu is the kubelet's admission lock: the kubelet admits pods one at a
// time, and a restart replaces the device manager; pods, the driver and
// the checkers all go through it.
type node struct {
	mu      sync.Mutex
	kubelet *harness.Kubelet
	pods    *harness.Pods
	held    map[types.UID]*heldPod
	seq     int
	inv     *inventory // set before the first admission
}

// heldPod is a running pod as admitted: the devices the kubelet chose and
// what its container was given.
type heldPod struct {
	Pod       *v1.Pod
	Resource  string
	IDs       []string // sorted kubelet device IDs
	Visible   []string // sorted NVIDIA_VISIBLE_DEVICES entries
	Exclusive bool     // the resource is not shared: nobody else may see these devices
	Admitted  time.Duration
}

// invariantError is a broken invariant, as opposed to an expected failure
// (a rejected pod while gpulet restarts, say).
type invariantError struct{ msg string }

func (e *invariantError) Error() string { return e.msg }

func violation(format string, args ...any) error {
	return &invariantError{msg: fmt.Sprintf(format, args...)}
}

// IsViolation reports whether err is a broken invariant.
func IsViolation(err error) bool {
	var v *invariantError
	return errors.As(err, &v)
}

func startNode() (*node, error) {
	pods := harness.NewPods()
	k, err := harness.StartKubelet(pods, nil)
	if err != nil {
		return nil, err
	}
	return &node{kubelet: k, pods: pods, held: map[types.UID]*heldPod{}}, nil
}

// admit has the kubelet admit a pod asking for count devices of resource.
// A rejection is returned as a plain error; a pod admitted in breach of an
// invariant as an invariantError (and the pod stays, so later checks see it).
func (n *node) admit(name, resource string, count int, exclusive bool, at time.Duration) (*heldPod, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seq++
	pod := harness.NewPod(fmt.Sprintf("%s-%d", name, n.seq), resource, count)
	all, err := n.kubelet.Admit(pod)
	var panicked *harness.PanicError
	if errors.As(err, &panicked) {
		// As a crashed kubelet's supervisor would: start it again. The pod
		// was not admitted.
		k, restartErr := n.kubelet.Restart()
		if restartErr != nil {
			return nil, fmt.Errorf("restarting the kubelet after its device manager panicked: %w", restartErr)
		}
		n.kubelet = k
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	opts := all["main"]
	h := &heldPod{Pod: pod, Resource: resource, IDs: opts.DeviceIDs[resource],
		Visible: splitVisible(opts.Envs[visibleDevices]), Exclusive: exclusive, Admitted: at}
	n.held[pod.UID] = h
	if len(h.IDs) != count {
		return h, violation("pod %s asked for %d %s and the kubelet recorded %v", pod.Name, count, resource, h.IDs)
	}
	want, err := n.inv.visible(h.IDs)
	if err != nil {
		return h, violation("pod %s got %s %v: %v", pod.Name, resource, h.IDs, err)
	}
	if !slices.Equal(h.Visible, want) {
		return h, violation("pod %s got %s %v but %s=%q (want the devices behind them: %v)",
			pod.Name, resource, h.IDs, visibleDevices, opts.Envs[visibleDevices], want)
	}
	if err := disjoint(n.held); err != nil {
		return h, err
	}
	return h, nil
}

// free deletes a pod: the kubelet frees its devices at its next admission.
func (n *node) free(h *heldPod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.held, h.Pod.UID)
	n.pods.Delete(h.Pod)
}

// restartKubelet stops the device manager and starts a new one on the same
// pods, as a kubelet restart does (the plugin's sockets are deleted).
func (n *node) restartKubelet() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	k, err := n.kubelet.Restart()
	if err != nil {
		return err
	}
	n.kubelet = k
	return nil
}

func (n *node) stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.kubelet.Stop()
}

// checkHeld compares the kubelet's allocations with the soak's record: every
// running pod still has exactly the devices it was admitted with (the
// checkpoint survives kubelet restarts, gpulet restarts do not touch it),
// and no device is in two running pods.
func (n *node) checkHeld() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	mgr := n.kubelet.Manager()
	for _, h := range n.held {
		var got []string
		for id := range mgr.GetDevices(string(h.Pod.UID), "main")[h.Resource] {
			got = append(got, id)
		}
		sort.Strings(got)
		if !slices.Equal(got, h.IDs) {
			return violation("pod %s was admitted with %s %v, the kubelet now says %v", h.Pod.Name, h.Resource, h.IDs, got)
		}
	}
	return disjoint(n.held)
}

// checkRunOptions asks the kubelet for every running pod's container
// options again (what a container restart gets): they must be those of
// its admission, whatever restarted since.
func (n *node) checkRunOptions() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range n.held {
		all, err := n.kubelet.RunOptions(h.Pod)
		if err != nil {
			return violation("pod %s (admitted at %v): %v", h.Pod.Name, h.Admitted, err)
		}
		opts := all["main"]
		got := splitVisible(opts.Envs[visibleDevices])
		if !slices.Equal(opts.DeviceIDs[h.Resource], h.IDs) || !slices.Equal(got, h.Visible) {
			return violation("pod %s was admitted with %v (%s=%v), its container would now get %v (%s=%v)",
				h.Pod.Name, h.IDs, visibleDevices, h.Visible, opts.DeviceIDs[h.Resource], visibleDevices, got)
		}
	}
	return nil
}

// resources is what the kubelet would put in the node status.
func (n *node) resources() map[string]harness.Resource {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.kubelet.Resources()
}

// healthyIDs returns the healthy device IDs of a resource.
func (n *node) healthyIDs(resource string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, d := range n.kubelet.HealthyDevices(resource) {
		out = append(out, d.ID)
	}
	return out
}

// freeIDs returns the healthy devices of a resource no running pod holds.
func (n *node) freeIDs(resource string) []string {
	ids := n.healthyIDs(resource)
	n.mu.Lock()
	defer n.mu.Unlock()
	used := map[string]bool{}
	for _, h := range n.held {
		for _, id := range h.IDs {
			used[id] = true
		}
	}
	var out []string
	for _, id := range ids {
		if !used[id] {
			out = append(out, id)
		}
	}
	return out
}

// heldCount is the number of running pods.
func (n *node) heldCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.held)
}

// disjoint checks that no kubelet device ID is in two running pods, and
// that no device a pod holds exclusively (an unshared resource) is visible
// to another running pod.
func disjoint(held map[types.UID]*heldPod) error {
	owner := map[string]string{}
	visible := map[string][]string{}
	for _, uid := range slices.Sorted(maps.Keys(held)) {
		h := held[uid]
		for _, id := range h.IDs {
			key := h.Resource + " " + id
			if other, ok := owner[key]; ok {
				return violation("%s %s is allocated to two running pods: %s and %s", h.Resource, id, other, h.Pod.Name)
			}
			owner[key] = h.Pod.Name
		}
		for _, dev := range h.Visible {
			visible[dev] = append(visible[dev], h.Pod.Name)
		}
	}
	for _, h := range held {
		if !h.Exclusive {
			continue
		}
		for _, dev := range h.Visible {
			if pods := visible[dev]; len(pods) > 1 {
				sort.Strings(pods)
				return violation("%s (%s, not shared) is visible to several running pods: %v", dev, h.Resource, pods)
			}
		}
	}
	return nil
}

func splitVisible(v string) []string {
	set := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			set[f] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// heldPods returns the running pods holding devices of resource.
func (n *node) heldPods(resource string) []*heldPod {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*heldPod
	for _, uid := range slices.Sorted(maps.Keys(n.held)) {
		if h := n.held[uid]; h.Resource == resource {
			out = append(out, h)
		}
	}
	return out
}
