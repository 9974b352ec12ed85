package scenario

// Node labels through node-feature-discovery's NodeFeature API
// (docs/labels.md): with NFD's CRD installed from deploy/nfd/ (its
// published YAML), gpulet, restarted, chooses the NodeFeature object over
// the Node patch and writes nvidia-features-for-<node> in its namespace,
// under deploy/node-policy.yaml's admission policies, with the labels it
// patched onto the Node before. The CRD is removed and gpulet restarted
// again afterwards, so the scenarios after this one see the Node patch.

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

func init() {
	register(Scenario{
		Name: "node-feature",
		Doc: "with node-feature-discovery's NodeFeature CRD installed (deploy/nfd/), a restarted gpulet " +
			"writes GFD's labels to NodeFeature kube-system/nvidia-features-for-<node> under deploy/'s " +
			"admission policies: the labels it patched onto the Node, labelled for the node",
		Machine: "dgx-h100",
		Run:     nodeFeatureScenario,
	})
}

const nodeFeatureGroupVersion = "/apis/nfd.k8s-sigs.io/v1alpha1"

type nodeFeatureObject struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Labels map[string]string `json:"labels"`
	} `json:"spec"`
}

// kubectlFile runs `kubectl <verb> -f <file>` against the cluster.
func kubectlFile(t *T, verb, file string, extra ...string) error {
	args := append([]string{"--kubeconfig", t.N.Kubeconfig, verb, "-f", file}, extra...)
	out, err := exec.CommandContext(t.Ctx, filepath.Join(t.N.Cfg.K8sBin, "kubectl"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s -f %s: %v: %s", verb, file, err, out)
	}
	return nil
}

// restartGpulet deletes gpulet's pod and waits for its successor to serve
// every GPU.
func restartGpulet(t *T) {
	n := t.N
	old, err := n.GpuletPod(t.Ctx)
	if err != nil || old == nil {
		t.Fatalf("no gpulet pod: %v", err)
	}
	if err := n.Client.CoreV1().Pods(old.Namespace).Delete(t.Ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete gpulet's pod: %v", err)
	}
	if err := n.WaitGpuletRunning(t.Ctx, string(old.UID)); err != nil {
		t.Fatalf("%v", err)
	}
	if err := n.WaitResources(t.Ctx, map[string]int{"nvidia.com/gpu": len(n.Machine.GPUs)}); err != nil {
		t.Fatalf("%v", err)
	}
}

func nodeFeatureScenario(t *T) {
	n := t.N
	// The labels gpulet patched onto the Node (the node-labels scenario
	// checks them): what the object must carry.
	labels, annotations, err := n.NodeMeta(t.Ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	want := map[string]string{}
	for _, k := range strings.Split(annotations[ownedAnnotation], ",") {
		if v, ok := labels[k]; ok && k != "" {
			want[k] = v
		}
	}
	if len(want) == 0 {
		t.Fatalf("gpulet has labelled no Node: annotation %q", annotations[ownedAnnotation])
	}

	crd := filepath.Join(n.Cfg.SourceDir, "deploy/nfd/nodefeature-crd.yaml")
	if err := kubectlFile(t, "create", crd); err != nil {
		t.Fatalf("%v", err)
	}
	defer func() {
		// Deleting the CRD deletes its objects; gpulet, restarted, patches
		// the Node again.
		if err := kubectlFile(t, "delete", crd, "--wait=true"); err != nil {
			t.Errorf("%v", err)
			return
		}
		restartGpulet(t)
	}()
	undo := applyOwnNodePolicy(t)
	defer func() {
		if err := undo(t.Ctx); err != nil {
			t.Errorf("removing the admission policies: %v", err)
		}
	}()
	err = n.WaitFor(t.Ctx, "nodefeatures to be served", 60*time.Second, func(ctx context.Context) (bool, error) {
		body, err := n.Client.Discovery().RESTClient().Get().AbsPath(nodeFeatureGroupVersion).DoRaw(ctx)
		return err == nil && strings.Contains(string(body), `"name":"nodefeatures"`), nil
	})
	if err != nil {
		t.Fatalf("%v", err)
	}

	start := time.Now()
	restartGpulet(t)
	path := fmt.Sprintf("%s/namespaces/kube-system/nodefeatures/nvidia-features-for-%s", nodeFeatureGroupVersion, node.NodeName)
	var got nodeFeatureObject
	err = n.WaitFor(t.Ctx, "gpulet's NodeFeature object", 60*time.Second, func(ctx context.Context) (bool, error) {
		body, err := n.Client.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		return true, json.Unmarshal(body, &got)
	})
	if err != nil {
		pod, _ := n.GpuletPod(t.Ctx)
		logs := ""
		if pod != nil {
			logs = n.Kubectl("-n", "kube-system", "logs", pod.Name, "--tail=20")
		}
		t.Fatalf("%v\n%s", err, logs)
	}
	t.Figure("gpulet restarted -> NodeFeature written", time.Since(start))
	if got.Metadata.Labels["nfd.node.kubernetes.io/node-name"] != node.NodeName {
		t.Errorf("NodeFeature labels %v, want nfd.node.kubernetes.io/node-name=%s", got.Metadata.Labels, node.NodeName)
	}
	var diffs []string
	for k, v := range want {
		if got.Spec.Labels[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s=%q (the Node has %q)", k, got.Spec.Labels[k], v))
		}
	}
	for k := range got.Spec.Labels {
		if _, ok := want[k]; !ok && k != "nvidia.com/gfd.timestamp" {
			diffs = append(diffs, k+" not on the Node")
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("NodeFeature spec.labels differ from the Node's: %s", strings.Join(diffs, "; "))
	}
}
