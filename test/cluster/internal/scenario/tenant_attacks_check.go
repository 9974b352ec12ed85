package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

// probeResult is one line of the probe pod (cmd/tenant-attack's Result).
type probeResult struct {
	Attack, Client, Error, Body string
	Status                      int
}

// The probe's attempts on the extender, each made without a client
// certificate and with one of the attacker's own CA; and with the agent's
// token on the API server.
var (
	extenderAttacks = []string{"readyz", "metrics", "filter", "prioritize", "bind-victim-plain",
		"bind-victim-selector", "bind-victim-gpu", "bind-absent-node", "filter-long-node-name", "bind-long-pod-name", "filter-20000-nodes",
		"prioritize-many-containers", "poison-filter", "poison-bind"}
	agentAttacks = []string{"agent-other-node-annotation", "agent-other-node-label", "agent-own-taints",
		"agent-own-unschedulable", "agent-own-restricted-label", "agent-own-hostname-label",
		"agent-own-other-annotation", "agent-own-status", "agent-own-gpulet-label"}
)

// readProbe reads the finished probe pod's lines (kept with the logs).
func readProbe(t *T) map[string]probeResult {
	b, err := t.N.Client.CoreV1().Pods(tenantNS).GetLogs(probePodName, &corev1.PodLogOptions{}).DoRaw(t.Ctx)
	if err != nil {
		t.Fatalf("the probe's log: %v", err)
	}
	_ = os.WriteFile(filepath.Join(t.N.Cfg.Paths.Logs(), "pod-"+probePodName+".txt"), b, 0644)
	out := map[string]probeResult{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r probeResult
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("the probe's line %q: %v", l, err)
		}
		out[r.Client+" "+r.Attack] = r
	}
	if _, ok := out[" done"]; !ok {
		t.Fatalf("the probe did not finish (no \"done\" line)")
	}
	return out
}

// judgeProbe checks every answer. Without a certificate the extender
// must be reached (/readyz answers) and refuse every verb and /metrics
// with 403; with another CA's certificate, the TLS handshake must fail
// (or 403). The agent's token must be accepted (its own nvidia.com/ label
// passes) and every other write refused by admission or RBAC.
func judgeProbe(t *T, got map[string]probeResult) {
	for _, a := range extenderAttacks {
		judge(t, got, "no-cert", a, func(r probeResult) bool {
			if a == "readyz" {
				return r.Status == 200
			}
			return r.Status == 403 || r.Status == 413
		})
		judge(t, got, "other-ca", a, func(r probeResult) bool {
			return r.Status == 403 || (r.Status == 0 && r.Error != "" && !unreached(r.Error))
		})
	}
	judgeStolenCert(t, got)
	for _, a := range agentAttacks {
		judge(t, got, "agent-token", a, func(r probeResult) bool {
			switch {
			case a == "agent-own-gpulet-label":
				return r.Status == 200
			case r.Status == 422: // the admission policy's refusal
				return strings.Contains(r.Body, "ValidatingAdmissionPolicy 'gpulet-node-agent'")
			default: // RBAC's (nodes/status)
				return r.Status == 403 && strings.Contains(r.Body, "forbidden")
			}
		})
	}
}

// judgeStolenCert: with kube-scheduler's certificate the verbs answer,
// but every bind is refused (400, or the scheduler protocol's Error) and
// names or counts Kubernetes would refuse are refused with 400. The
// GPU-memory pod that fits is refused for its node selector, the one too
// large without its size, the absent node as not known. That nothing was
// bound is checkEffects'.
func judgeStolenCert(t *T, got map[string]probeResult) {
	const client = "scheduler-cert"
	for _, a := range []string{"readyz", "metrics", "filter", "prioritize"} {
		judge(t, got, client, a, func(r probeResult) bool { return r.Status == 200 })
	}
	refused := func(r probeResult) bool {
		return r.Status == 400 || (r.Status == 200 && strings.Contains(r.Body, `"Error":"`) &&
			!strings.Contains(r.Body, `"Error":""`))
	}
	for _, a := range []string{"bind-victim-plain", "poison-bind"} {
		judge(t, got, client, a, refused)
	}
	judge(t, got, client, "bind-victim-selector", func(r probeResult) bool {
		return refused(r) && strings.Contains(r.Body, "spec.nodeSelector (label gpulet.test/no-such-label)")
	})
	judge(t, got, client, "bind-victim-gpu", func(r probeResult) bool {
		return refused(r) && !strings.Contains(r.Body, "GiB") && !strings.Contains(r.Body, "MiB")
	})
	judge(t, got, client, "bind-absent-node", func(r probeResult) bool {
		return refused(r) && strings.Contains(r.Body, "node "+absentNode+" is not known") &&
			!strings.Contains(r.Body, "/api/v1")
	})
	for _, a := range []string{"filter-long-node-name", "bind-long-pod-name", "filter-20000-nodes"} {
		judge(t, got, client, a, func(r probeResult) bool { return r.Status == 400 })
	}
}

func judge(t *T, got map[string]probeResult, client, attack string, ok func(probeResult) bool) {
	r, found := got[client+" "+attack]
	switch {
	case !found:
		t.Errorf("%s %s: the probe did not report it", client, attack)
	case !ok(r):
		t.Errorf("%s %s: answered %d %q (error %q)", client, attack, r.Status, r.Body, r.Error)
	}
}

// unreached: the extender was not reached at all, which proves nothing.
func unreached(err string) bool {
	for _, s := range []string{"connection refused", "i/o timeout", "no route to host", "Client.Timeout"} {
		if strings.Contains(err, s) {
			return true
		}
	}
	return false
}

// checkEffects checks the API server's state after the attacks: the
// victims are the same pods, still unbound, none recorded in the own
// Node's pending annotation; no pod is bound to the node
// that does not exist; the other Node is as it was; the own Node has the
// agent's own label and nothing else the attacks tried.
func checkEffects(t *T, victims []*corev1.Pod, otherAnnotation string, before ownNode) {
	c := t.N.Client.CoreV1()
	for _, v := range victims {
		p, err := c.Pods(v.Namespace).Get(t.Ctx, v.Name, metav1.GetOptions{})
		if err != nil || p.UID != v.UID || p.Spec.NodeName != "" {
			t.Errorf("victim %s/%s: %v (want uid %s, unbound)", v.Namespace, v.Name, describePod(p, err), v.UID)
		}
	}
	onAbsent, err := c.Pods("").List(t.Ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + absentNode})
	if err != nil || len(onAbsent.Items) != 0 {
		t.Errorf("pods bound to %s: %v", absentNode, describeList(onAbsent, err))
	}
	other, err := c.Nodes().Get(t.Ctx, otherNodeName, metav1.GetOptions{})
	if err != nil {
		t.Errorf("node %s: %v", otherNodeName, err)
	} else if other.Annotations[memAnnotation] != otherAnnotation || other.Labels["nvidia.com/tenant-attack"] != "" {
		t.Errorf("node %s was changed by another node's agent: %s=%q, labels %v", otherNodeName, memAnnotation,
			other.Annotations[memAnnotation], other.Labels)
	}
	own, err := c.Nodes().Get(t.Ctx, node.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node %s: %v", node.NodeName, err)
	}
	now := snapshotOwnNode(t)
	if !slices.EqualFunc(now.taints, before.taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) }) ||
		now.unschedulable != before.unschedulable || now.hostname != before.hostname || now.capacity != before.capacity {
		t.Errorf("node %s: the agent's token changed it: %+v, was %+v", node.NodeName, now, before)
	}
	if v, ok := own.Labels["node-restriction.kubernetes.io/tenant-attack"]; ok {
		t.Errorf("node %s: the agent's token set node-restriction.kubernetes.io/tenant-attack=%s", node.NodeName, v)
	}
	if v, ok := own.Annotations["example.com/tenant-attack"]; ok {
		t.Errorf("node %s: the agent's token set the annotation example.com/tenant-attack=%s", node.NodeName, v)
	}
	for _, v := range victims {
		if strings.Contains(own.Annotations[pendingAnnotation], string(v.UID)) {
			t.Errorf("node %s: victim %s/%s is in %s: %s", node.NodeName, v.Namespace, v.Name, pendingAnnotation,
				own.Annotations[pendingAnnotation])
		}
	}
	if own.Labels["nvidia.com/tenant-attack"] != "x" {
		t.Errorf("node %s: the agent's token could not set its own nvidia.com/tenant-attack label", node.NodeName)
	}
}

func describePod(p *corev1.Pod, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("uid %s, nodeName %q", p.UID, p.Spec.NodeName)
}

func describeList(l *corev1.PodList, err error) string {
	if err != nil {
		return err.Error()
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return strings.Join(names, ", ")
}
