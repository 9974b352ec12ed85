package scenario

// A tenant with one pod attacks gpulet extender and, holding the node
// agent's token of the one GPU node it owns, the Nodes (docs/security.md).
// The same calls are made a third time with kube-scheduler's own client
// certificate, as if stolen: past mutual TLS, bind must still refuse
// what the extender did not place.
// The attacker is test/cluster/cmd/tenant-attack in the tenant-attack
// image, run in a Pod Security restricted namespace under a service
// account of its own with no RBAC. It reaches the extender at the node's
// address (node.ExtenderPodAddress), where a Service's address would take
// it, and reports each attempt; the scenario judges the answers
// (tenant_attacks_check.go) and then the effects on the API server.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

func init() {
	register(Scenario{
		Name: "tenant-attacks",
		Doc: "a pod of a restricted tenant namespace, without a client certificate or with one of its own CA, " +
			"calls gpulet extender: binds another namespace's pending pods, to this node and to one that does " +
			"not exist, sends oversized names and element counts, poisons filter with forged sizes, reads " +
			"/metrics; another pod floods it with idle connections while kube-scheduler places GPU-memory pods " +
			"through it; with the node agent's bound token the pod patches another Node and its own Node's " +
			"spec, status and foreign labels; every attempt is refused and has no effect, the agent's own " +
			"nvidia.com/ label passes; with kube-scheduler's client certificate, as if stolen, bind still binds " +
			"no victim and nothing to the absent node",
		Machine: "mixed-memory",
		Run:     tenantAttacksScenario,
	})
}

const (
	victimNS      = "gpulet-victim"
	otherNodeName = "gpulet-other-node"
	absentNode    = "no-such-node"
	attackerSA    = "tenant-attacker"
	agentSecret   = "gpulet-agent-token"
	stolenSecret  = "stolen-scheduler-cert"
	probePodName  = "tenant-probe"
	floodPodName  = "tenant-flood"
	floodConns    = 200
)

func tenantAttacksScenario(t *T) {
	start := time.Now()
	m, undo := setUpMemoryShares(t)
	defer undo()
	defer deleteAllMemPods(t)
	pid := m.ext.PID()
	victims := createVictims(t, m)
	defer deleteNamespace(t, victimNS)
	other := createOtherNode(t)
	defer deleteOtherNode(t)
	before := snapshotOwnNode(t)
	defer restoreOwnNode(t, before)
	createTenantNamespace(t)
	defer deleteTenantNamespace(t)
	createAttackerAccount(t, m.ext)
	t.Figure("tenant-attacks: set-up", time.Since(start))

	phase := time.Now()
	createTenantPod(t, tenantPod(floodPodName, []string{"flood", "-extender", node.ExtenderPodAddress,
		"-conns", fmt.Sprint(floodConns)}, false))
	defer deletePodsIn(t, tenantNS, floodPodName)
	waitFlood(t, "the flood to open its connections", 0, func(s FloodStatusLine) bool { return s.Dialed >= floodConns })
	createTenantPod(t, tenantPod(probePodName, probeArgs(victims), true))
	defer deletePodsIn(t, tenantNS, probePodName)

	// kube-scheduler places GPU-memory pods through the extender while
	// the flood goes on.
	var pods []*corev1.Pod
	for i, units := range []int{2, 5, 10, 20} {
		pods = append(pods, memPod(fmt.Sprintf("during-flood-%d", i), []int{units}, memResource))
	}
	createPods(t, pods)
	for _, p := range pods {
		waitPodRunning(t, p.Name)
	}
	seen := floodLines(t)
	last := waitFlood(t, "the flood to go on after the GPU-memory pods ran", len(seen),
		func(s FloodStatusLine) bool { return s.Open > 0 })
	t.Figure("tenant-attacks: flood started -> 4 GPU-memory pods running", time.Since(phase))
	t.FigureText("tenant-attacks: flood connections opened / closed by the extender",
		fmt.Sprintf("%d / %d", last.Dialed, last.Closed))

	waitPodSucceeded(t, tenantNS, probePodName)
	judgeProbe(t, readProbe(t))
	checkEffects(t, victims, other, before)
	if got := m.ext.PID(); got != pid || !m.ext.Ready(t.Ctx) {
		t.Errorf("the extender (pid %d before the attacks) is pid %d now, ready: %v", pid, got, m.ext.Ready(t.Ctx))
	}
	t.Figure("tenant-attacks: total", time.Since(start))
}

// probeArgs are the probe's: the extender and the API server at the
// node's address, the agent's token as mounted, and the victims (the
// GPU-memory one last).
func probeArgs(victims []*corev1.Pod) []string {
	var v []string
	for _, p := range victims {
		v = append(v, fmt.Sprintf("%s/%s/%s", p.Namespace, p.Name, p.UID))
	}
	return []string{"probe", "-extender", node.ExtenderPodAddress, "-api", node.APIServerURL,
		"-token-file", "/var/run/gpulet-agent/token", "-own-node", node.NodeName,
		"-other-node", otherNodeName, "-absent-node", absentNode, "-victims", strings.Join(v, ","),
		"-cert-dir", "/var/run/" + stolenSecret}
}

// tenantPod runs the attacker once under every setting Pod Security
// "restricted" asks for, as the tenant's own service account. withSecrets
// mounts the agent's token (agentSecret) and the stolen certificate
// (stolenSecret).
func tenantPod(name string, args []string, withSecrets bool) *corev1.Pod {
	p := exploitPod(name, 0)
	c := &p.Spec.Containers[0]
	c.Image, c.Command, c.Args = node.TenantAttackImage, []string{"/tenant-attack"}, args
	p.Spec.ServiceAccountName = attackerSA
	if !withSecrets {
		return p
	}
	for _, m := range [][2]string{{agentSecret, "/var/run/gpulet-agent"}, {stolenSecret, "/var/run/" + stolenSecret}} {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: m[0], VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: m[0]}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: m[0], MountPath: m[1], ReadOnly: true})
	}
	return p
}

func createTenantPod(t *T, p *corev1.Pod) {
	if _, err := t.N.Client.CoreV1().Pods(tenantNS).Create(t.Ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s in %s (Pod Security restricted): %v", p.Name, tenantNS, err)
	}
}

// FloodStatusLine is one status line of the flood pod.
type FloodStatusLine struct {
	Flood                string
	Open, Dialed, Closed int64
}

// floodLines are the flood pod's status lines so far.
func floodLines(t *T) []FloodStatusLine {
	b, err := t.N.Client.CoreV1().Pods(tenantNS).GetLogs(floodPodName, &corev1.PodLogOptions{}).DoRaw(t.Ctx)
	if err != nil {
		return nil
	}
	var out []FloodStatusLine
	for _, l := range strings.Split(string(b), "\n") {
		var s FloodStatusLine
		if json.Unmarshal([]byte(l), &s) == nil && s.Flood == "status" {
			out = append(out, s)
		}
	}
	return out
}

// waitFlood waits until a status line after the first `after` ones
// satisfies ok, and returns it. The flood pod must keep running.
func waitFlood(t *T, what string, after int, ok func(FloodStatusLine) bool) FloodStatusLine {
	var found FloodStatusLine
	err := t.N.WaitFor(t.Ctx, what, 120*time.Second, func(ctx context.Context) (bool, error) {
		p, err := t.N.Client.CoreV1().Pods(tenantNS).Get(ctx, floodPodName, metav1.GetOptions{})
		if err == nil && p.Status.Phase != corev1.PodPending && p.Status.Phase != corev1.PodRunning {
			return false, fmt.Errorf("the flood pod ended: %s", p.Status.Phase)
		}
		lines := floodLines(t)
		for i := after; i < len(lines); i++ {
			if ok(lines[i]) {
				found = lines[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, t.N.Kubectl("logs", "-n", tenantNS, floodPodName, "--tail", "5"))
	}
	return found
}
