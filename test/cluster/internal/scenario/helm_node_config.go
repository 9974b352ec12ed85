package scenario

// One configuration per node through the chart (docs/helm.md): config.map
// with two entries, each node running the one its label
// nvidia.com/device-plugin.config names; gpulet follows the label in place.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"gpulet.dev/test/cluster/internal/node"
)

func init() {
	register(Scenario{
		Name: "helm-node-config",
		Doc: "deploy/'s objects replaced by the chart with two configurations (default: no sharing; ts: " +
			"time-slicing 4 ways) picked per node by label: unlabelled the node advertises the 8 GPUs by " +
			"UUID; labelled ts, the 32 replica IDs, and the Node's annotation says ts; labelled with a " +
			"name that is no configuration, ts stays and the error annotation says why; the label " +
			"removed, the 8 GPUs again; all in one gpulet process (same pod, no container restart, no " +
			"new registration); helm uninstall, the label and annotations removed, deploy/ applied again",
		Run: helmNodeConfigScenario,
	})
}

const (
	configLabel      = "nvidia.com/device-plugin.config"
	configAnnotation = "gpulet.dev/device-plugin-config"
	configError      = "gpulet.dev/device-plugin-config-error"
)

// noSharingConfig advertises every GPU once, by UUID.
const noSharingConfig = `version: v1
flags:
  migStrategy: none
  failOnInitError: true
  plugin:
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
`

// nodeConfigValues: the two configurations as config.map (the chart's
// per-node mode), the extender left out as in the helm scenario.
func nodeConfigValues() string {
	indent := func(s string) string {
		return "      " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n      ") + "\n"
	}
	return "config:\n  map:\n    default: |\n" + indent(noSharingConfig) +
		"    ts: |\n" + indent(timeSlicingConfig(4)) + "extender:\n  enabled: false\n"
}

func helmNodeConfigScenario(t *T) {
	n := t.N
	uuids := profileGPUs(t)
	gpus := len(uuids)
	old, err := n.GpuletPod(t.Ctx)
	if err != nil || old == nil {
		t.Fatalf("no gpulet pod from deploy/ (%v)", err)
	}
	restored := false
	defer func() {
		if restored {
			return
		}
		// Whatever failed, leave deploy/'s gpulet and an unlabelled Node.
		_ = n.HelmUninstall(t.Ctx)
		_ = n.DeleteGpulet(t.Ctx)
		if err := patchNodeConfig(t, nil, true); err != nil {
			t.Errorf("%v", err)
		}
		if err := n.DeployGpulet(t.Ctx, node.NoSharingConfig); err != nil {
			t.Errorf("applying deploy/ again: %v", err)
		}
	}()
	if err := n.DeleteGpulet(t.Ctx); err != nil {
		t.Fatalf("deleting deploy/'s objects: %v", err)
	}
	if err := n.HelmInstall(t.Ctx, n.HelmValues(nodeConfigValues())); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.WaitGpuletRunning(t.Ctx, string(old.UID)); err != nil {
		t.Fatalf("%v", err)
	}
	// Unlabelled: the entry named "default" (the fallback "named").
	waitNodeConfig(t, "default", false)
	expectAllocatable(t, "nvidia.com/gpu", gpus)
	expectAllocatableIDs(t, "unlabelled (configuration default)", uuids)
	g := currentGpulet(t, "nvidia.com/gpu")

	start := time.Now()
	label(t, "ts")
	waitNodeConfig(t, "ts", false)
	expectAllocatable(t, "nvidia.com/gpu", 4*gpus)
	t.Figure("label ts -> 4 replicas in the API server", time.Since(start))
	expectAllocatableIDs(t, "labelled ts", replicaIDs(uuids, 4))

	// A label naming no configuration changes nothing but the error.
	label(t, "no-such-config")
	waitNodeConfig(t, "ts", true)
	expectAllocatableIDs(t, "labelled no-such-config (ts kept)", replicaIDs(uuids, 4))

	start = time.Now()
	label(t, "")
	waitNodeConfig(t, "default", false)
	expectAllocatable(t, "nvidia.com/gpu", gpus)
	t.Figure("label removed -> GPUs unshared in the API server", time.Since(start))
	expectAllocatableIDs(t, "label removed", uuids)
	g.expectSame(t)

	if err := n.HelmUninstall(t.Ctx); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.WaitGpuletGone(t.Ctx); err != nil {
		t.Fatalf("after helm uninstall: %v", err)
	}
	if _, err := n.Client.RbacV1().ClusterRoles().Get(t.Ctx, "gpulet-node-config", metav1.GetOptions{}); err == nil {
		t.Errorf("ClusterRole gpulet-node-config is still there after helm uninstall")
	}
	restored = true
	if err := patchNodeConfig(t, nil, true); err != nil {
		t.Errorf("%v", err)
	}
	if err := n.DeployGpulet(t.Ctx, node.NoSharingConfig); err != nil {
		t.Fatalf("applying deploy/ again: %v", err)
	}
	if err := n.WaitResources(t.Ctx, map[string]int{"nvidia.com/gpu": gpus}); err != nil {
		t.Fatalf("deploy/ again: %v", err)
	}
}

// label sets the Node's configuration label to value ("" removes it).
func label(t *T, value string) {
	var v any
	if value != "" {
		v = value
	}
	if err := patchNodeConfig(t, v, false); err != nil {
		t.Fatalf("%v", err)
	}
}

// patchNodeConfig merge-patches the Node's configuration label (nil
// removes it) and, with annotations, removes gpulet's configuration
// annotations, as the administrator would.
func patchNodeConfig(t *T, value any, annotations bool) error {
	meta := map[string]any{"labels": map[string]any{configLabel: value}}
	if annotations {
		meta["annotations"] = map[string]any{configAnnotation: nil, configError: nil}
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	_, err = t.N.Client.CoreV1().Nodes().Patch(t.Ctx, node.NodeName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patching node %s's label %s: %w", node.NodeName, configLabel, err)
	}
	return nil
}

// waitNodeConfig waits until the Node's annotations say that `config` is
// in force and, with failed, that the label's configuration is not (the
// error annotation set), or, without, that no error is left.
func waitNodeConfig(t *T, config string, failed bool) {
	var got map[string]string
	what := fmt.Sprintf("node %s's annotation %s=%s (error annotation set: %v)", node.NodeName, configAnnotation, config, failed)
	err := t.N.WaitFor(t.Ctx, what, 60*time.Second, func(ctx context.Context) (bool, error) {
		nd, err := t.N.Client.CoreV1().Nodes().Get(ctx, node.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = nd.Annotations
		in, ok := got[configAnnotation]
		_, hasErr := got[configError]
		return ok && in == config && hasErr == failed, nil
	})
	if err != nil {
		pod, _ := t.N.GpuletPod(t.Ctx)
		logs := ""
		if pod != nil {
			logs = t.N.Kubectl("-n", "kube-system", "logs", pod.Name, "--tail=20")
		}
		t.Fatalf("%v: annotations %v\n%s", err, got, logs)
	}
}
