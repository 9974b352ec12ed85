package scenario

import (
	"fmt"
	"sort"
	"strings"
)

func init() {
	register(Scenario{
		Name: "gpu-pod",
		Doc: "a pod with nvidia.com/gpu: 2 runs with exactly its two GPUs' device nodes, " +
			"cgroup rules, NVIDIA_VISIBLE_DEVICES (the UUIDs the kubelet allocated) and driver mounts; " +
			"a pod without a request gets none of it",
		Run: gpuPodScenario,
	})
}

// control nodes every GPU container gets (the CDI spec's shared edits).
var controlNodes = map[string]string{
	"nvidiactl":        "c 195:255",
	"nvidia-modeset":   "c 195:254",
	"nvidia-uvm":       "c 511:0",
	"nvidia-uvm-tools": "c 511:1",
}

func gpuPodScenario(t *T) {
	n := t.N
	d := createAndWaitRunning(t, gpuPod("gpu-pod", 2, "nvidia.com/gpu"))
	t.Figure("kubectl apply -> Running, 1 pod with 2 GPUs", d)
	createAndWaitRunning(t, gpuPod("plain-pod", 0, ""))
	defer deletePods(t, "gpu-pod", "plain-pod")

	ids := allocatedDevices(t, "gpu-pod", "nvidia.com/gpu")
	if len(ids) != 2 {
		t.Fatalf("the kubelet allocated %v to gpu-pod, want 2 devices", ids)
	}
	profile := profileGPUs(t)
	for _, id := range ids {
		profileIndex(t, profile, id)
	}
	wantDev := map[string]bool{}
	wantRules := map[string]bool{}
	for name, rule := range controlNodes {
		wantDev[name] = true
		wantRules[rule] = true
	}
	for _, id := range ids {
		minor := -1
		for _, g := range n.Machine.GPUs {
			if g.UUID == id {
				minor = g.Minor
			}
		}
		if minor < 0 {
			t.Fatalf("allocated device %s is not a GPU of the machine", id)
		}
		wantDev[fmt.Sprintf("nvidia%d", minor)] = true
		wantRules[fmt.Sprintf("c 195:%d", minor)] = true
	}

	r := podReport(t, "gpu-pod")
	expectSet(t, "gpu-pod: /dev/nvidia*", nvidiaDevs(r["dev"]), wantDev)
	expectSet(t, "gpu-pod: device cgroup rules for NVIDIA majors", nvidiaRules(r["cgroup devices"]), wantRules)
	env := envMap(r["env"])
	if v := env["NVIDIA_VISIBLE_DEVICES"]; v == "" {
		t.Errorf("gpu-pod: NVIDIA_VISIBLE_DEVICES unset")
	}
	// The container asked for exactly the GPUs the kubelet allocated (its
	// checkpoint), by UUID (deviceIDStrategy: uuid), in any order.
	v := requestedVisibleDevices(t, "gpu-pod")
	expectIDSet(t, "gpu-pod: NVIDIA_VISIBLE_DEVICES="+v+" in the container's spec", strings.Split(v, ","), ids)
	lib := fmt.Sprintf("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.%s", n.Machine.DriverVersion)
	if !mounted(r["mounts"], lib) {
		t.Errorf("gpu-pod: the driver's %s is not mounted", lib)
	}

	plain := podReport(t, "plain-pod")
	expectSet(t, "plain-pod: /dev/nvidia*", nvidiaDevs(plain["dev"]), map[string]bool{})
	expectSet(t, "plain-pod: device cgroup rules for NVIDIA majors", nvidiaRules(plain["cgroup devices"]), map[string]bool{})
	if v, ok := envMap(plain["env"])["NVIDIA_VISIBLE_DEVICES"]; ok {
		t.Errorf("plain-pod: NVIDIA_VISIBLE_DEVICES=%s, want unset", v)
	}
	if mounted(plain["mounts"], lib) {
		t.Errorf("plain-pod: %s is mounted", lib)
	}
}

func nvidiaDevs(lines []string) map[string]bool {
	out := map[string]bool{}
	for _, l := range lines {
		for _, f := range strings.Fields(l) {
			if strings.HasPrefix(f, "nvidia") {
				out[f] = true
			}
		}
	}
	return out
}

// nvidiaRules returns the device cgroup rules (cgroup v1 devices.list:
// "c 195:0 rw") for the majors `gpulet sim render` gives NVIDIA's devices
// (195, nvidia-caps 235, nvidia-uvm 511), as "c 195:0".
func nvidiaRules(lines []string) map[string]bool {
	out := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) >= 2 && (strings.HasPrefix(f[1], "195:") || strings.HasPrefix(f[1], "235:") || strings.HasPrefix(f[1], "511:")) {
			out[f[0]+" "+f[1]] = true
		}
	}
	return out
}

func envMap(lines []string) map[string]string {
	out := map[string]string{}
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}

func mounted(mountinfo []string, path string) bool {
	for _, l := range mountinfo {
		if f := strings.Fields(l); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}

func expectSet(t *T, what string, got, want map[string]bool) {
	if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
		t.Errorf("%s: got %v, want %v", what, sorted(got), sorted(want))
	}
}

func sorted(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}
