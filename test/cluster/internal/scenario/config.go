package scenario

import (
	"fmt"
	"slices"
	"strings"

	"gpulet.dev/test/cluster/internal/node"
)

func init() {
	register(Scenario{
		Name: "strategies",
		Doc: "every deviceListStrategy the runtime side serves (envvar, volume-mounts, cdi-annotations) " +
			"reaches a running container through containerd and gpulet-runtime",
		Run: strategiesScenario,
	})
	register(Scenario{
		Name: "time-slicing",
		Doc: "deploy/configmap-example.yaml as shipped (every GPU time-sliced 4 ways) reaches gpulet " +
			"through the ConfigMap and a rollout restart; the kubelet then has exactly <uuid>::0..3 of every GPU, " +
			"and a pod given one sees that GPU",
		Run: timeSlicingScenario,
	})
}

func strategyConfig(strategy string) string {
	return fmt.Sprintf(`version: v1
flags:
  migStrategy: none
  plugin:
    deviceListStrategy: %s
    deviceIDStrategy: uuid
`, strategy)
}

func strategiesScenario(t *T) {
	n := t.N
	full := map[string]int{"nvidia.com/gpu": len(n.Machine.GPUs)}
	defer func() {
		if err := n.Reconfigure(t.Ctx, node.NoSharingConfig, full); err != nil {
			t.Errorf("restoring the config: %v", err)
		}
	}()
	for _, strategy := range []string{"envvar", "volume-mounts", "cdi-annotations"} {
		if err := n.Reconfigure(t.Ctx, strategyConfig(strategy), full); err != nil {
			t.Fatalf("%s: %v", strategy, err)
		}
		name := "strategy-" + strategy
		createAndWaitRunning(t, gpuPod(name, 1, "nvidia.com/gpu"))
		ids := allocatedDevices(t, name, "nvidia.com/gpu")
		r := podReport(t, name)
		deletePods(t, name)
		if len(ids) != 1 {
			t.Errorf("%s: allocated %v", strategy, ids)
			continue
		}
		want := map[string]bool{}
		for d := range controlNodes {
			want[d] = true
		}
		for _, g := range n.Machine.GPUs {
			if g.UUID == ids[0] {
				want[fmt.Sprintf("nvidia%d", g.Minor)] = true
			}
		}
		expectSet(t, strategy+": /dev/nvidia*", nvidiaDevs(r["dev"]), want)
		env := envMap(r["env"])
		switch strategy {
		case "volume-mounts":
			if !strings.Contains(strings.Join(r["mounts"], "\n"), "/var/run/nvidia-container-devices/"+ids[0]) {
				t.Errorf("volume-mounts: no mount /var/run/nvidia-container-devices/%s", ids[0])
			}
		case "cdi-annotations":
			if _, ok := env["NVIDIA_VISIBLE_DEVICES"]; ok && env["NVIDIA_VISIBLE_DEVICES"] != "void" {
				t.Errorf("cdi-annotations: NVIDIA_VISIBLE_DEVICES=%s", env["NVIDIA_VISIBLE_DEVICES"])
			}
		}
	}
}

func timeSlicingScenario(t *T) {
	n := t.N
	uuids := profileGPUs(t)
	gpus := len(uuids)
	// The example shares every GPU 4 ways: the replica IDs <uuid>::0..3 of
	// every GPU of the profile, no other.
	replicas := replicaIDs(uuids, 4)
	if err := n.Reconfigure(t.Ctx, node.ExampleConfig, map[string]int{"nvidia.com/gpu": len(replicas)}); err != nil {
		t.Fatalf("%v", err)
	}
	defer func() {
		if err := n.Reconfigure(t.Ctx, node.NoSharingConfig, map[string]int{"nvidia.com/gpu": gpus}); err != nil {
			t.Errorf("restoring the config: %v", err)
		}
	}()
	if err := waitAllocatableIDs(t, "nvidia.com/gpu", replicas); err != nil {
		t.Errorf("the time-sliced GPUs: %v", err)
	}
	createAndWaitRunning(t, gpuPod("shared", 1, "nvidia.com/gpu"))
	defer deletePods(t, "shared")
	ids := allocatedDevices(t, "shared", "nvidia.com/gpu")
	if len(ids) != 1 || !slices.Contains(replicas, ids[0]) {
		t.Fatalf("a time-sliced pod got %v, want one of the replica IDs %v", ids, replicas)
	}
	// The container asked for the replica's GPU, by the UUID the ID names.
	uuid, _, _ := strings.Cut(ids[0], "::")
	if v := requestedVisibleDevices(t, "shared"); v != uuid {
		t.Errorf("the pod given replica %s was created with NVIDIA_VISIBLE_DEVICES=%q, want %s", ids[0], v, uuid)
	}
}
