package scenario

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"gpulet.dev/test/kubelet/harness"
)

// Admitted is a pod the kubelet admitted, with what its container got.
type Admitted struct {
	Pod  *v1.Pod
	IDs  []string // devices the kubelet chose, sorted
	Opts *harness.RunOptions
}

// Admit creates a pod asking for count devices, has the kubelet admit it and
// checks what its container would run with.
func (e *Env) Admit(prefix string, count int) (*Admitted, error) {
	e.podSeq++
	pod := harness.NewPod(fmt.Sprintf("%s-%d", prefix, e.podSeq), e.Spec.Resource, count)
	all, err := e.Kubelet.Admit(pod)
	if err != nil {
		return nil, err
	}
	a := &Admitted{Pod: pod, Opts: all["main"]}
	a.IDs = a.Opts.DeviceIDs[e.Spec.Resource]
	if err := e.CheckAllocation(pod.Name, count, a.IDs, a.Opts); err != nil {
		return nil, err
	}
	return a, nil
}

// Reject has the kubelet try to admit a pod asking for count devices and
// returns the kubelet's error, failing if the pod was admitted.
func (e *Env) Reject(prefix string, count int) (string, error) {
	e.podSeq++
	pod := harness.NewPod(fmt.Sprintf("%s-%d", prefix, e.podSeq), e.Spec.Resource, count)
	if _, err := e.Kubelet.Admit(pod); err != nil {
		return err.Error(), nil
	}
	e.Pods.Delete(pod)
	return "", fmt.Errorf("kubelet admitted pod %s asking for %d %s; expected a rejection", pod.Name, count, e.Spec.Resource)
}

// CheckAllocation checks what a container got for count devices.
func (e *Env) CheckAllocation(pod string, count int, ids []string, opts *harness.RunOptions) error {
	if len(ids) != count {
		return fmt.Errorf("pod %s asked for %d %s but the kubelet recorded %d devices: %v", pod, count, e.Spec.Resource, len(ids), ids)
	}
	healthy := map[string]bool{}
	for _, d := range e.Kubelet.HealthyDevices(e.Spec.Resource) {
		healthy[d.ID] = true
	}
	for _, id := range ids {
		if !healthy[id] {
			return fmt.Errorf("pod %s got device %s, which is not a healthy advertised device", pod, id)
		}
	}
	if e.Spec.EnvName != "" {
		if err := e.checkEnv(pod, ids, opts); err != nil {
			return err
		}
	}
	if e.Spec.CheckRunOptions != nil {
		if err := e.Spec.CheckRunOptions(ids, opts); err != nil {
			return fmt.Errorf("pod %s: %w\n%s", pod, err, opts)
		}
	}
	return nil
}

func (e *Env) checkEnv(pod string, ids []string, opts *harness.RunOptions) error {
	value, ok := opts.Envs[e.Spec.EnvName]
	if !ok {
		return fmt.Errorf("pod %s: the container gets no %s; it gets:\n%s", pod, e.Spec.EnvName, opts)
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[e.Spec.MapID(id)] = true
	}
	got := map[string]bool{}
	for _, v := range strings.Split(value, ",") {
		got[v] = true
	}
	if !mapsEqual(want, got) {
		return fmt.Errorf("pod %s: %s=%q, but the kubelet allocated %v (expected the set %v)",
			pod, e.Spec.EnvName, value, ids, setList(want))
	}
	return nil
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func setList(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func overlap(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
