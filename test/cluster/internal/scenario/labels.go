package scenario

// Node labels (docs/labels.md): gpulet, deployed from deploy/ with its
// ClusterRole, merge-patches gpu-feature-discovery's labels onto its own
// Node through the API server, from the pod's service account. Read back
// from the API server: the labels follow a configuration reload, labels
// gpulet set before and no longer computes are removed, a label gpulet does
// not own stays. The reloads run under deploy/node-policy.yaml's admission
// policy, which lets gpulet's service account update only its own Node's
// nvidia.com/ labels and gpulet.dev/ annotations.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"gpulet.dev/test/cluster/internal/node"
)

func init() {
	register(Scenario{
		Name: "node-labels",
		Doc: "gpulet labels its Node (GFD's set) through the API server; under deploy/'s own-node " +
			"admission policy, a reload to time-slicing x4 and migStrategy mixed changes them (-SHARED, " +
			"replicas 4, mig.strategy), a reload back removes nvidia.com/mig.strategy; an administrator's " +
			"label is never touched; the policy refuses another node's gpulet, spec changes and other labels",
		Machine: "dgx-h100",
		Run:     nodeLabelsScenario,
	})
}

const (
	ownedAnnotation = "gpulet.dev/node-labels"
	adminLabel      = "example.com/team"
)

// sharedMixedConfig shares every GPU 4 ways and asks for migStrategy mixed
// (the H100s have MIG off: the resources stay, the labels say "mixed").
const sharedMixedConfig = `version: v1
flags:
  migStrategy: mixed
  failOnInitError: true
  plugin:
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
`

// labelCheck is what the node's labels must hold: values, and keys that
// must be missing.
type labelCheck struct {
	want   map[string]string
	absent []string
}

// mismatch describes how labels and annotations differ from c ("" when
// they fit); the owned-labels annotation must list exactly the labels
// wanted that gpulet sets.
func (c labelCheck) mismatch(labels, annotations map[string]string) string {
	var diffs []string
	for k, v := range c.want {
		if got, ok := labels[k]; !ok || got != v {
			diffs = append(diffs, fmt.Sprintf("%s=%q (want %q)", k, got, v))
		}
	}
	owned := map[string]bool{}
	for _, k := range strings.Split(annotations[ownedAnnotation], ",") {
		owned[k] = true
	}
	for _, k := range c.absent {
		if _, ok := labels[k]; ok {
			diffs = append(diffs, k+" still set")
		}
		if owned[k] {
			diffs = append(diffs, k+" still listed as owned")
		}
	}
	for k := range c.want {
		if strings.HasPrefix(k, "nvidia.com/") && !owned[k] {
			diffs = append(diffs, k+" not listed as owned")
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

func expectNodeLabels(t *T, what string, c labelCheck) {
	if err := t.N.WaitNodeMeta(t.Ctx, what, func(l, a map[string]string) bool { return c.mismatch(l, a) == "" }); err != nil {
		l, a, _ := t.N.NodeMeta(t.Ctx)
		t.Fatalf("%v: %s", err, c.mismatch(l, a))
	}
}

func nodeLabelsScenario(t *T) {
	n := t.N
	team := "gpu-infra"
	if err := n.SetNodeLabel(t.Ctx, adminLabel, &team); err != nil {
		t.Fatalf("%v", err)
	}
	defer func() {
		if err := n.SetNodeLabel(t.Ctx, adminLabel, nil); err != nil {
			t.Errorf("%v", err)
		}
	}()
	restored := false
	defer func() {
		if !restored {
			restoreNoSharing(t)
		}
	}()
	gpus := fmt.Sprint(len(n.Machine.GPUs))
	base := map[string]string{
		"nvidia.com/gpu.product":              "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.count":                gpus,
		"nvidia.com/gpu.memory":               "81559",
		"nvidia.com/gpu.family":               "hopper",
		"nvidia.com/gpu.compute.major":        "9",
		"nvidia.com/gpu.compute.minor":        "0",
		"nvidia.com/gpu.replicas":             "1",
		"nvidia.com/gpu.sharing-strategy":     "none",
		"nvidia.com/mig.capable":              "true",
		"nvidia.com/mps.capable":              "false",
		"nvidia.com/cuda.driver.major":        "550",
		"nvidia.com/cuda.driver.minor":        "54",
		"nvidia.com/cuda.driver.rev":          "15",
		"nvidia.com/cuda.runtime.major":       "12",
		"nvidia.com/cuda.runtime.minor":       "4",
		"nvidia.com/cuda.driver-version.full": "550.54.15",
		adminLabel:                            team,
	}
	expectNodeLabels(t, "gpulet's labels on the Node", labelCheck{want: base,
		absent: []string{"nvidia.com/mig.strategy", "nvidia.com/gfd.timestamp"}})

	undo := applyOwnNodePolicy(t)
	defer func() {
		if err := undo(t.Ctx); err != nil {
			t.Errorf("removing the admission policy: %v", err)
		}
	}()

	g := currentGpulet(t, "nvidia.com/gpu")
	shared := map[string]string{}
	for k, v := range base {
		shared[k] = v
	}
	shared["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3-SHARED"
	shared["nvidia.com/gpu.replicas"] = "4"
	shared["nvidia.com/gpu.sharing-strategy"] = "time-slicing"
	shared["nvidia.com/mig.strategy"] = "mixed"
	sent := g.reload(t, sharedMixedConfig, node.ReloadAccepted)
	expectNodeLabels(t, "the shared configuration's labels", labelCheck{want: shared})
	t.Figure("SIGHUP -> new labels on the Node", time.Since(sent))

	sent = g.reload(t, node.NoSharingConfig, node.ReloadAccepted)
	expectNodeLabels(t, "the labels back without sharing, mig.strategy removed", labelCheck{want: base,
		absent: []string{"nvidia.com/mig.strategy"}})
	restored = true
	t.Figure("SIGHUP -> stale label removed from the Node", time.Since(sent))
	g.expectSame(t)
}

const (
	gpuletUser    = "system:serviceaccount:kube-system:gpulet"
	nodeNameExtra = "authentication.kubernetes.io/node-name"
	probeLabel    = "nvidia.com/gpu.policy-probe"
)

// applyOwnNodePolicy applies deploy/node-policy.yaml, waits
// until the API server enforces it and checks what it lets gpulet's service
// account do: label its own Node, not another one, not change the spec.
func applyOwnNodePolicy(t *T) func(context.Context) error {
	n := t.N
	undo, err := n.ApplyDeployFile(t.Ctx, "node-policy.yaml")
	if err != nil {
		t.Fatalf("%v", err)
	}
	checked := false
	defer func() {
		if !checked {
			_ = undo(t.Ctx)
		}
	}()
	defer func() {
		if err := n.SetNodeLabel(t.Ctx, probeLabel, nil); err != nil {
			t.Errorf("%v", err)
		}
	}()
	elsewhere, err := n.ClientAs(gpuletUser, map[string][]string{nodeNameExtra: {"another-node"}})
	if err != nil {
		t.Fatalf("%v", err)
	}
	own, err := n.ClientAs(gpuletUser, map[string][]string{nodeNameExtra: {node.NodeName}})
	if err != nil {
		t.Fatalf("%v", err)
	}
	probe := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"x"}}}`, probeLabel))
	var last error
	if err := n.WaitFor(t.Ctx, "the admission policy to refuse another node's gpulet", 60*time.Second,
		func(ctx context.Context) (bool, error) {
			_, last = elsewhere.CoreV1().Nodes().Patch(ctx, node.NodeName, types.MergePatchType, probe, metav1.PatchOptions{})
			return last != nil && strings.Contains(last.Error(), "gpulet's node agent may write only the Node its pod runs on"), nil
		}); err != nil {
		t.Fatalf("%v (last answer: %v)", err, last)
	}
	if _, err := own.CoreV1().Nodes().Patch(t.Ctx, node.NodeName, types.MergePatchType, probe, metav1.PatchOptions{}); err != nil {
		t.Errorf("gpulet's service account with this node's name may not label it: %v", err)
	}
	spec := []byte(`{"spec":{"unschedulable":true}}`)
	_, err = own.CoreV1().Nodes().Patch(t.Ctx, node.NodeName, types.MergePatchType, spec, metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "gpulet's node agent may not change a Node's spec") {
		t.Errorf("a spec change by gpulet's service account: got %v, want the policy's refusal", err)
		uncordon := []byte(`{"spec":{"unschedulable":null}}`)
		if _, err := n.Client.CoreV1().Nodes().Patch(t.Ctx, node.NodeName, types.MergePatchType, uncordon, metav1.PatchOptions{}); err != nil {
			t.Errorf("uncordoning the node: %v", err)
		}
	}
	foreign := []byte(`{"metadata":{"labels":{"example.com/policy-probe":"x"}}}`)
	_, err = own.CoreV1().Nodes().Patch(t.Ctx, node.NodeName, types.MergePatchType, foreign, metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "not example.com/policy-probe") {
		t.Errorf("a non-gpulet label set by gpulet's service account: got %v, want the policy's refusal", err)
		if err := n.SetNodeLabel(t.Ctx, "example.com/policy-probe", nil); err != nil {
			t.Errorf("%v", err)
		}
	}
	checked = true
	return undo
}
