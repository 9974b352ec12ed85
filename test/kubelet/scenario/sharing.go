package scenario

import (
	"fmt"
	"sort"
	"strings"

	"gpulet.dev/test/kubelet/harness"
)

// StripReplica maps a replica's device ID "<id>::<n>" to <id>, what NVIDIA's
// plugin (and gpulet) put in NVIDIA_VISIBLE_DEVICES for it.
func StripReplica(id string) string {
	if i := strings.Index(id, "::"); i >= 0 {
		return id[:i]
	}
	return id
}

func runResources(e *Env) error {
	if len(e.Spec.ExtraResources) == 0 {
		return skipf("no --extra-resource given")
	}
	var names []string
	for name := range e.Spec.ExtraResources {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		want := int64(e.Spec.ExtraResources[name])
		err := e.wait(fmt.Sprintf("%s with %d healthy devices", name, want), func() (bool, string) {
			r, ok := e.Kubelet.Resources()[name]
			if !ok {
				return false, fmt.Sprintf("%s not in the node's resources %v", name, e.Kubelet.Resources())
			}
			return r.Capacity == want && r.Allocatable == want,
				fmt.Sprintf("capacity %d, allocatable %d", r.Capacity, r.Allocatable)
		})
		if err != nil {
			return err
		}
		e.step("kubelet sees %s: %d healthy devices", name, want)
	}
	for _, name := range names {
		e.podSeq++
		pod := harness.NewPod(fmt.Sprintf("one-%d", e.podSeq), name, 1)
		all, err := e.Kubelet.Admit(pod)
		if err != nil {
			return fmt.Errorf("pod %s asking for 1 %s: %w", pod.Name, name, err)
		}
		opts := all["main"]
		ids := opts.DeviceIDs[name]
		if len(ids) != 1 {
			return fmt.Errorf("pod %s asked for 1 %s and the kubelet recorded %v", pod.Name, name, ids)
		}
		envName := e.Spec.EnvName
		if e.Spec.ExtraEnvName != "" {
			envName = e.Spec.ExtraEnvName
			// Another world's resource: nothing of the main one's.
			if v, ok := opts.Envs[e.Spec.EnvName]; ok && e.Spec.EnvName != envName {
				return fmt.Errorf("pod %s asked for 1 %s and got %s=%q", pod.Name, name, e.Spec.EnvName, v)
			}
			for _, d := range opts.Devices {
				if strings.Contains(d, "-> /dev/vfio/") {
					return fmt.Errorf("pod %s asked for 1 %s and got %s", pod.Name, name, d)
				}
			}
		}
		if envName != "" && opts.Envs[envName] != e.Spec.MapID(ids[0]) {
			return fmt.Errorf("pod %s got %s but %s=%q", pod.Name, ids[0], envName, opts.Envs[envName])
		}
		e.step("pod %s got %s %s; env %s", pod.Name, name, ids[0], envSummary(e, opts))
	}
	return nil
}

func runSharedLimit(e *Env) error {
	if !e.Spec.SharedLimit {
		return skipf("the resource is not limited to one device per request (--shared-limit)")
	}
	one, err := e.Admit("one", 1)
	if err != nil {
		return err
	}
	e.step("pod %s asking for 1 device got %v", one.Pod.Name, one.IDs)
	msg, err := e.Reject("two", 2)
	if err != nil {
		return err
	}
	want := fmt.Sprintf("invalid allocation request for %q: invalid request: maximum request size for shared resources is 1; found 2", e.Spec.Resource)
	if !strings.Contains(msg, want) {
		return fmt.Errorf("admission error %q does not contain NVIDIA's %q", msg, want)
	}
	e.step("pod asking for 2 is rejected: %s", msg)
	return nil
}
