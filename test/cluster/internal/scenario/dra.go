package scenario

// What the DRA scenarios share: claims and templates, pods that use them,
// where an allocation went, and what the container got.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

// gpuletCheckpoint is gpulet dra's prepared-claims checkpoint on the node
// (the DaemonSet's plugin directory, a hostPath).
const gpuletCheckpoint = "/var/lib/kubelet/plugins/" + node.DRADriver + "/checkpoint.json"

// claimRequest is a claim's one request, "gpus".
type claimRequest struct {
	class    string
	count    int64 // 0: all matching devices (allocationMode All)
	selector string
	// matchAttribute: a constraint that all devices share this attribute.
	matchAttribute string
}

func (r claimRequest) spec() resourcev1.ResourceClaimSpec {
	req := resourcev1.ExactDeviceRequest{DeviceClassName: r.class}
	if r.count == 0 {
		req.AllocationMode = resourcev1.DeviceAllocationModeAll
	} else {
		req.AllocationMode = resourcev1.DeviceAllocationModeExactCount
		req.Count = r.count
	}
	if r.selector != "" {
		req.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: r.selector}}}
	}
	spec := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "gpus", Exactly: &req}}}}
	if r.matchAttribute != "" {
		attr := resourcev1.FullyQualifiedName(r.matchAttribute)
		spec.Devices.Constraints = []resourcev1.DeviceConstraint{{Requests: []string{"gpus"}, MatchAttribute: &attr}}
	}
	return spec
}

func createTemplate(t *T, name string, r claimRequest) {
	tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: r.spec()}}
	if _, err := t.N.Client.ResourceV1().ResourceClaimTemplates(ns).Create(t.Ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaimTemplate %s: %v", name, err)
	}
}

func createClaim(t *T, name string, r claimRequest) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: r.spec()}
	got, err := t.N.Client.ResourceV1().ResourceClaims(ns).Create(t.Ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ResourceClaim %s: %v", name, err)
	}
	return got
}

func deleteTemplate(t *T, name string) {
	err := t.N.Client.ResourceV1().ResourceClaimTemplates(ns).Delete(t.Ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete ResourceClaimTemplate %s: %v", name, err)
	}
}

func deleteClaim(t *T, name string) {
	err := t.N.Client.ResourceV1().ResourceClaims(ns).Delete(t.Ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete ResourceClaim %s: %v", name, err)
	}
}

// claimPod is the reporting pod of gpuPod whose container uses one claim,
// "gpu": from the template `template`, or the ResourceClaim `claim`.
func claimPod(name, template, claim string) *corev1.Pod {
	p := gpuPod(name, 0, "")
	pc := corev1.PodResourceClaim{Name: "gpu"}
	if template != "" {
		pc.ResourceClaimTemplateName = &template
	} else {
		pc.ResourceClaimName = &claim
	}
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{pc}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	return p
}

// allocation is a pod's claim as allocated.
type allocation struct {
	claim   string
	uid     string
	devices []string // DRA device names of our driver, on this node
}

// podClaim returns the allocation of the claim a pod's "gpu" entry uses
// (a claim named in the pod, one made from its template, or the claim the
// scheduler made for its extended resources).
func podClaim(t *T, podName string) allocation {
	p, err := t.N.Client.CoreV1().Pods(ns).Get(t.Ctx, podName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", podName, err)
	}
	name := ""
	for _, pc := range p.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			name = *pc.ResourceClaimName
		}
	}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			name = *s.ResourceClaimName
		}
	}
	if s := p.Status.ExtendedResourceClaimStatus; s != nil && name == "" {
		name = s.ResourceClaimName
	}
	if name == "" {
		t.Fatalf("pod %s has no ResourceClaim", podName)
	}
	return claimAllocation(t, name)
}

func claimAllocation(t *T, name string) allocation {
	c, err := t.N.Client.ResourceV1().ResourceClaims(ns).Get(t.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ResourceClaim %s: %v", name, err)
	}
	a := allocation{claim: name, uid: string(c.UID)}
	if c.Status.Allocation == nil {
		t.Fatalf("ResourceClaim %s is not allocated", name)
	}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != node.DRADriver || r.Pool != node.NodeName {
			t.Errorf("ResourceClaim %s: device %s/%s/%s is not gpulet's on this node", name, r.Driver, r.Pool, r.Device)
			continue
		}
		a.devices = append(a.devices, r.Device)
	}
	return a
}

// sliceUUIDs maps the devices of the node's ResourceSlices to their uuid
// attribute.
func sliceUUIDs(t *T) map[string]string {
	devices, err := t.N.SliceDevices(t.Ctx)
	if err != nil {
		t.Fatalf("list ResourceSlices: %v", err)
	}
	out := map[string]string{}
	for name, d := range devices {
		if v, ok := d.Attributes["uuid"]; ok && v.StringValue != nil {
			out[name] = *v.StringValue
		}
	}
	return out
}

// expectDraContainer checks what a pod's container got for its claim
// allocation a: the device nodes and cgroup rules of exactly the GPUs with
// gpuUUIDs (and, for MIG devices, their capability nodes, wantCaps), the
// driver's NVML, NVIDIA_VISIBLE_DEVICES=void (the claim spec's edits), and
// gpulet-runtime's record of injecting each of the claim's CDI devices.
func expectDraContainer(t *T, podName string, a allocation, gpuUUIDs []string, wantCaps map[string]int) {
	n := t.N
	wantDev := map[string]bool{}
	wantRules := map[string]bool{}
	for name, rule := range controlNodes {
		wantDev[name] = true
		wantRules[rule] = true
	}
	for _, uuid := range gpuUUIDs {
		minor := -1
		for _, g := range n.Machine.GPUs {
			if g.UUID == uuid {
				minor = g.Minor
			}
		}
		if minor < 0 {
			t.Fatalf("%s: allocated GPU %s is not one of the machine's", podName, uuid)
		}
		wantDev[fmt.Sprintf("nvidia%d", minor)] = true
		wantRules[fmt.Sprintf("c 195:%d", minor)] = true
	}
	wantCapDevs := map[string]bool{}
	for _, minor := range wantCaps {
		wantDev["nvidia-caps"] = true
		wantCapDevs[fmt.Sprintf("nvidia-cap%d", minor)] = true
		wantRules[fmt.Sprintf("c 235:%d", minor)] = true
	}
	r := podReport(t, podName)
	expectSet(t, podName+": /dev/nvidia*", nvidiaDevs(r["dev"]), wantDev)
	expectSet(t, podName+": /dev/nvidia-caps", nvidiaDevs(r["nvidia-caps"]), wantCapDevs)
	expectSet(t, podName+": device cgroup rules for NVIDIA majors", nvidiaRules(r["cgroup devices"]), wantRules)
	if v := envMap(r["env"])["NVIDIA_VISIBLE_DEVICES"]; v != "void" {
		t.Errorf("%s: NVIDIA_VISIBLE_DEVICES=%q, want void (the claim spec's edit)", podName, v)
	}
	lib := fmt.Sprintf("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.%s", n.Machine.DriverVersion)
	if !mounted(r["mounts"], lib) {
		t.Errorf("%s: the driver's %s is not mounted", podName, lib)
	}
	cid, _ := containerID(t, podName)
	_, cid, _ = strings.Cut(cid, "://")
	rlog, err := os.ReadFile(n.Cfg.Paths.RuntimeLog())
	if err != nil {
		t.Fatalf("%v", err)
	}
	// "container <id>: injected <CDI name>,<CDI name>..."
	injected := map[string]bool{}
	for _, l := range strings.Split(string(rlog), "\n") {
		if _, names, ok := strings.Cut(l, "container "+cid+": injected "); ok {
			for _, name := range strings.Split(names, ",") {
				injected[name] = true
			}
		}
	}
	want := map[string]bool{}
	for _, d := range a.devices {
		want[fmt.Sprintf("k8s.%s/claim=%s-%s", node.DRADriver, a.uid, d)] = true
	}
	expectSet(t, podName+": CDI devices gpulet-runtime injected", injected, want)
}

// preparedClaims reads gpulet dra's checkpoint: claim UID -> namespace/name.
func preparedClaims(t *T) map[string]string {
	b, err := os.ReadFile(gpuletCheckpoint)
	if err != nil {
		t.Fatalf("gpulet's checkpoint: %v", err)
	}
	var cp struct {
		Claims map[string]struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"claims"`
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatalf("gpulet's checkpoint %s: %v", gpuletCheckpoint, err)
	}
	out := map[string]string{}
	for uid, c := range cp.Claims {
		out[uid] = c.Namespace + "/" + c.Name
	}
	return out
}

// expectPrepared checks that gpulet's checkpoint holds each allocation's
// claim and that its CDI spec is on the node.
func expectPrepared(t *T, as ...allocation) {
	held := preparedClaims(t)
	for _, a := range as {
		if _, ok := held[a.uid]; !ok {
			t.Errorf("gpulet's checkpoint does not hold claim %s (%s) of a running pod", a.claim, a.uid)
		}
		if _, err := os.Stat(claimSpecPath(a.uid)); err != nil {
			t.Errorf("claim %s: %v", a.claim, err)
		}
	}
}

func claimSpecPath(uid string) string {
	return filepath.Join(node.DynamicCDIDir, "k8s."+node.DRADriver+"-claim_"+uid+".json")
}

// expectUnprepared waits until gpulet's checkpoint no longer holds the
// allocations' claims, their CDI specs are gone, and each claim is gone
// or deallocated (template claims are deleted with their pod; a
// ResourceClaim of its own stays, without an allocation).
func expectUnprepared(t *T, as ...allocation) {
	err := t.N.WaitFor(t.Ctx, "gpulet to unprepare the claims", 60*time.Second, func(ctx context.Context) (bool, error) {
		held := preparedClaims(t)
		for _, a := range as {
			if _, ok := held[a.uid]; ok {
				return false, nil
			}
			if _, err := os.Stat(claimSpecPath(a.uid)); err == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("%v", err)
	}
	for _, a := range as {
		err := t.N.WaitFor(t.Ctx, "claim "+a.claim+" to be deallocated", 60*time.Second, func(ctx context.Context) (bool, error) {
			c, err := t.N.Client.ResourceV1().ResourceClaims(ns).Get(ctx, a.claim, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return err == nil && string(c.UID) == a.uid && c.Status.Allocation == nil && len(c.Status.ReservedFor) == 0, nil
		})
		if err != nil {
			t.Errorf("%v", err)
		}
	}
}

// nvlinkIslands returns, per GPU index, the smallest index of the GPUs it
// reaches over NVLink, from the machine's interconnect matrix (`gpulet topo
// --json`, "NV<n>" entries): the machine's islands, independently of what
// gpulet publishes.
func nvlinkIslands(t *T) map[int]int {
	cmd := exec.Command(t.N.Cfg.Gpulet, "--nvml-lib", t.N.Cfg.SimLib, "topo", "--json")
	cmd.Env = append(os.Environ(), "GPULET_SIM_MACHINE="+t.N.Cfg.Machine)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gpulet topo --json: %v", err)
	}
	var topo struct {
		Matrix [][]string `json:"matrix"`
	}
	if err := json.Unmarshal(out, &topo); err != nil {
		t.Fatalf("gpulet topo --json: %v", err)
	}
	island := map[int]int{}
	for i := range topo.Matrix {
		island[i] = i
		for j := range topo.Matrix[i] {
			if strings.HasPrefix(topo.Matrix[i][j], "NV") && j < island[i] {
				island[i] = j
			}
		}
	}
	return island
}

// waitUnschedulable waits until the scheduler marks a pod unschedulable
// and returns its message.
func waitUnschedulable(t *T, podName string) string {
	msg := ""
	err := t.N.WaitFor(t.Ctx, "pod "+podName+" to be unschedulable", 60*time.Second, func(ctx context.Context) (bool, error) {
		p, err := t.N.Client.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s was scheduled to %s", podName, p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	return msg
}

// waitClaimDeviceStatus waits until gpulet dra wrote the claim's
// status.devices entry of `device` (KEP-4817) and returns its data.
func waitClaimDeviceStatus(t *T, a allocation, device string) map[string]any {
	var data map[string]any
	err := t.N.WaitFor(t.Ctx, "claim "+a.claim+"'s status.devices entry of "+device, 60*time.Second,
		func(ctx context.Context) (bool, error) {
			c, err := t.N.Client.ResourceV1().ResourceClaims(ns).Get(ctx, a.claim, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, d := range c.Status.Devices {
				if d.Driver != "gpu.nvidia.com" || d.Device != device || d.Data == nil {
					continue
				}
				data = map[string]any{}
				if err := json.Unmarshal(d.Data.Raw, &data); err != nil {
					return false, fmt.Errorf("status.devices data of %s: %v", device, err)
				}
				return true, nil
			}
			return false, nil
		})
	if err != nil {
		t.Fatalf("%v", err)
	}
	return data
}
