package scenario

// Devices by ID: what the scenarios expect, from the simulator's profile of
// the machine (never from what gpulet reports), and what the kubelet counts
// allocatable, from its PodResources API. A fault that takes out the
// neighbouring GPU, or a reload that advertises the right number of the
// wrong devices, keeps every count right; only the IDs tell.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"sigs.k8s.io/yaml"

	"gpulet.dev/test/cluster/internal/node"
)

// podResourcesSocket is the kubelet's PodResources API (its root directory
// is /var/lib/kubelet inside the fixture's mount namespace).
const podResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// simProfile is the part of a simulator machine file the scenarios read.
type simProfile struct {
	GPUs []struct {
		UUID        string  `json:"uuid"`
		BoundDriver *string `json:"boundDriver"`
	} `json:"gpus"`
}

// profilePath is the machine file of the cluster's machine: a path as
// given, or a built-in profile under sim/profiles/.
func profilePath(t *T) string {
	m := t.N.Cfg.Machine
	if strings.Contains(m, "/") || strings.HasSuffix(m, ".yaml") || strings.HasSuffix(m, ".yml") {
		return m
	}
	return filepath.Join(t.N.Cfg.SourceDir, "sim/profiles", m+".yaml")
}

// profileGPUs returns the UUIDs of the machine's GPUs by NVML index, read
// from its simulator profile.
func profileGPUs(t *T) []string {
	uuids, err := readProfileGPUs(profilePath(t))
	if err != nil {
		t.Fatalf("the machine's profile: %v", err)
	}
	return uuids
}

// readProfileGPUs returns the UUIDs of a machine file's GPUs by NVML index:
// NVML enumerates the GPUs on the nvidia driver in the file's order.
func readProfileGPUs(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p simProfile
	if err := yaml.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var uuids []string
	for _, g := range p.GPUs {
		if g.BoundDriver == nil || *g.BoundDriver == "nvidia" {
			uuids = append(uuids, g.UUID)
		}
	}
	if len(uuids) == 0 {
		return nil, fmt.Errorf("%s: no GPU on the nvidia driver", path)
	}
	return uuids, nil
}

// profileIndex returns the NVML index of the GPU with a UUID in the
// profile, ending the scenario if there is none.
func profileIndex(t *T, gpus []string, uuid string) int {
	i := slices.Index(gpus, uuid)
	if i < 0 {
		t.Fatalf("device %s is no GPU of the machine's profile %v", uuid, gpus)
	}
	return i
}

// replicaIDs returns <uuid>::0 .. <uuid>::<replicas-1> for each UUID.
func replicaIDs(uuids []string, replicas int) []string {
	var out []string
	for _, u := range uuids {
		for r := 0; r < replicas; r++ {
			out = append(out, fmt.Sprintf("%s::%d", u, r))
		}
	}
	return out
}

// except returns the IDs of all that are not in drop.
func except(all []string, drop ...string) []string {
	var out []string
	for _, id := range all {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}

// allocatableIDs returns the device IDs of a resource that the kubelet
// counts allocatable (its healthy devices), sorted.
func allocatableIDs(ctx context.Context, resource string) ([]string, error) {
	conn, err := grpc.NewClient("unix://"+podResourcesSocket,
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	resp, err := podresourcesv1.NewPodResourcesListerClient(conn).
		GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("PodResources GetAllocatableResources: %w", err)
	}
	var ids []string
	for _, d := range resp.GetDevices() {
		if d.GetResourceName() == resource {
			ids = append(ids, d.GetDeviceIds()...)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// waitAllocatableIDs waits until the kubelet's allocatable devices of a
// resource are exactly want; the error says which IDs differ.
func waitAllocatableIDs(t *T, resource string, want []string) error {
	want = slices.Sorted(slices.Values(want))
	var got []string // the last answer, kept across a failed call
	seen := false
	var lastErr error
	err := t.N.WaitFor(t.Ctx, fmt.Sprintf("the kubelet's allocatable %s to be exactly %d given devices", resource, len(want)),
		60*time.Second, func(ctx context.Context) (bool, error) {
			ids, err := allocatableIDs(ctx, resource)
			lastErr = err
			if err != nil {
				return false, nil
			}
			got, seen = ids, true
			return slices.Equal(got, want), nil
		})
	if err == nil {
		return nil
	}
	if !seen {
		return fmt.Errorf("%w (no answer; last: %v)", err, lastErr)
	}
	if lastErr != nil {
		err = fmt.Errorf("%w (the last call failed: %v)", err, lastErr)
	}
	return fmt.Errorf("%w: last answer allocatable but not expected %v; expected but not allocatable %v",
		err, except(got, want...), except(want, got...))
}

// expectIDSet reports an error unless got and want hold the same IDs.
func expectIDSet(t *T, what string, got, want []string) {
	g := slices.Sorted(slices.Values(got))
	w := slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		t.Errorf("%s: got %v, want %v", what, g, w)
	}
}

// requestedVisibleDevices returns NVIDIA_VISIBLE_DEVICES as a running pod's
// container asked for it: from the OCI spec containerd made of the kubelet's
// request (where the device plugin's Allocate answer is), before
// gpulet-runtime applied the CDI edits, which set it to "void" inside.
func requestedVisibleDevices(t *T, podName string) string {
	cid, _ := containerID(t, podName)
	id := strings.TrimPrefix(cid, "containerd://")
	out, err := exec.CommandContext(t.Ctx, "ctr", "--address", node.ContainerdSocket, "-n", "k8s.io",
		"containers", "info", id).Output()
	if err != nil {
		t.Fatalf("ctr containers info %s: %v", id, err)
	}
	var info struct {
		Spec struct {
			Process struct {
				Env []string `json:"env"`
			} `json:"process"`
		} `json:"Spec"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("ctr containers info %s: %v", id, err)
	}
	for _, e := range info.Spec.Process.Env {
		if v, ok := strings.CutPrefix(e, "NVIDIA_VISIBLE_DEVICES="); ok {
			return v
		}
	}
	t.Fatalf("pod %s's container %s was created without NVIDIA_VISIBLE_DEVICES (env %v)", podName, id, info.Spec.Process.Env)
	return ""
}
