package scenario

import (
	"context"
	"encoding/json"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"gpulet.dev/test/cluster/internal/node"
)

// createVictims creates another tenant's namespace with three pods that
// wait for the scheduler: one asks for no GPU (its node selector matches
// no node), one for one unit of GPU memory, which fits, but its node
// selector matches no node either, one for more GPU memory than any GPU
// has. It returns them (the oversized GPU-memory one last) once the
// scheduler has found no place for any.
func createVictims(t *T, m *memShares) []*corev1.Pod {
	c := t.N.Client.CoreV1()
	if _, err := c.Namespaces().Create(t.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victimNS}},
		metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", victimNS, err)
	}
	waitDefaultAccount(t, victimNS)
	excluded := map[string]string{"gpulet.test/no-such-label": "1"}
	plain := gpuPod("victim-plain", 0, "")
	plain.Spec.NodeSelector = excluded
	selector := memPod("victim-selector", []int{1}, memResource)
	selector.Spec.NodeSelector = excluded
	largest := 0
	for _, u := range m.units {
		largest = max(largest, u)
	}
	gpu := memPod("victim-gpu", []int{largest + 1}, memResource)
	var out []*corev1.Pod
	for _, p := range []*corev1.Pod{plain, selector, gpu} {
		p.Namespace, p.Labels = victimNS, nil
		created, err := c.Pods(victimNS).Create(t.Ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s/%s: %v", victimNS, p.Name, err)
		}
		out = append(out, created)
	}
	err := t.N.WaitFor(t.Ctx, "the victims to be found unschedulable", 120*time.Second, func(ctx context.Context) (bool, error) {
		for _, p := range out {
			got, err := c.Pods(victimNS).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if _, ok := unschedulableReason(got); !ok || got.Spec.NodeName != "" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

func waitDefaultAccount(t *T, namespace string) {
	err := t.N.WaitFor(t.Ctx, "namespace "+namespace+"'s default ServiceAccount", 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := t.N.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
}

// createOtherNode creates a second Node (no kubelet behind it) with a
// copy of this node's GPU-memory annotation, as another GPU node's agent
// would have written it; it returns that annotation.
func createOtherNode(t *T) string {
	_, annotations, err := t.N.NodeMeta(t.Ctx)
	if err != nil {
		t.Fatalf("node %s: %v", node.NodeName, err)
	}
	value := annotations[memAnnotation]
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: otherNodeName,
		Annotations: map[string]string{memAnnotation: value}}}
	if _, err := t.N.Client.CoreV1().Nodes().Create(t.Ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", otherNodeName, err)
	}
	return value
}

func deleteOtherNode(t *T) {
	err := t.N.Client.CoreV1().Nodes().Delete(t.Ctx, otherNodeName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete node %s: %v", otherNodeName, err)
	}
}

// createAttackerAccount gives the tenant its own service account, with
// no RBAC, and two Secrets of its namespace: the node agent's token (the
// attacker owns the GPU node, so it has the token gpulet's pod there
// holds; bound to that pod, the API server knows the node), which the
// attacker pod presents to the API server itself; and kube-scheduler's
// client certificate for the extender, as if stolen.
func createAttackerAccount(t *T, ext *node.Extender) {
	c := t.N.Client.CoreV1()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: attackerSA}}
	if _, err := c.ServiceAccounts(tenantNS).Create(t.Ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account %s/%s: %v", tenantNS, attackerSA, err)
	}
	token, err := t.N.GpuletPodToken(t.Ctx)
	if err != nil {
		t.Fatalf("%v", err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: agentSecret}, StringData: map[string]string{"token": token}}
	stolen := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: stolenSecret}, Data: map[string][]byte{}}
	for key, path := range map[string]string{"tls.crt": ext.SchedulerCert, "tls.key": ext.SchedulerKey} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("kube-scheduler's client certificate: %v", err)
		}
		stolen.Data[key] = b
	}
	for _, s := range []*corev1.Secret{secret, stolen} {
		if _, err := c.Secrets(tenantNS).Create(t.Ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create secret %s/%s: %v", tenantNS, s.Name, err)
		}
	}
}

// ownNode is what the agent's token must not change on its own Node.
type ownNode struct {
	taints        []corev1.Taint
	unschedulable bool
	hostname      string
	capacity      string
}

func snapshotOwnNode(t *T) ownNode {
	n, err := t.N.Client.CoreV1().Nodes().Get(t.Ctx, node.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node %s: %v", node.NodeName, err)
	}
	q := n.Status.Capacity[memResource]
	return ownNode{taints: n.Spec.Taints, unschedulable: n.Spec.Unschedulable,
		hostname: n.Labels["kubernetes.io/hostname"], capacity: q.String()}
}

// restoreOwnNode removes what the attacks set on the node: the label the
// agent may set, and whatever a regression let through (so that a failed
// run leaves a node gpulet's pod can come back to).
func restoreOwnNode(t *T, before ownNode) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels": map[string]any{"nvidia.com/tenant-attack": nil, "node-restriction.kubernetes.io/tenant-attack": nil,
			"kubernetes.io/hostname": before.hostname},
		"annotations": map[string]any{"example.com/tenant-attack": nil}},
		"spec": map[string]any{"taints": before.taints, "unschedulable": before.unschedulable}})
	_, err := t.N.Client.CoreV1().Nodes().Patch(t.Ctx, node.NodeName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Errorf("restore node %s: %v", node.NodeName, err)
	}
}

// deleteNamespace deletes a namespace and waits until it is gone.
func deleteNamespace(t *T, name string) {
	c := t.N.Client.CoreV1()
	if err := c.Namespaces().Delete(t.Ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete namespace %s: %v", name, err)
		return
	}
	err := t.N.WaitFor(t.Ctx, "namespace "+name+" to be gone", 120*time.Second, func(ctx context.Context) (bool, error) {
		_, err := c.Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("%v", err)
	}
}
