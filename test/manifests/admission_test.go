package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/kubernetes/pkg/apis/admissionregistration"
)

// deployWithExtender is deploy/ and the extender's manifests (less the
// scheduler's configuration, which is no API object).
func deployWithExtender(t *testing.T) []Object {
	t.Helper()
	deploy, _ := dirs(t)
	objs, err := LoadDir(deploy)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"extender.yaml", "node-policy.yaml", "networkpolicy.yaml"} {
		more, err := LoadFile(filepath.Join(deploy, "extender", f))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, more...)
	}
	return objs
}

// deploy/ ships the node agent's policy, bound, for deploy/'s service
// account; the extender's policy names the extender's.
func TestNodePoliciesNameTheirAccounts(t *testing.T) {
	_, docs := dirs(t)
	objs := deployWithExtender(t)
	if _, err := CheckObjects(objs, docs); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"gpulet-node-agent":     "kube-system/gpulet",
		"gpulet-node-features":  "kube-system/gpulet",
		"gpulet-extender-nodes": "kube-system/gpulet-extender",
	}
	for _, o := range objs {
		p, ok := o.Internal.(*admissionregistration.ValidatingAdmissionPolicy)
		if !ok {
			continue
		}
		if got := strings.Join(PolicyAccounts(p), ","); got != want[p.Name] {
			t.Errorf("%s: accounts %q, want %q", p.Name, got, want[p.Name])
		}
		delete(want, p.Name)
	}
	if len(want) != 0 {
		t.Errorf("policies missing: %v", want)
	}
}

// Policies, bindings and NetworkPolicies that do not fit the rest are
// refused, each with its reason.
func TestAdmissionObjectsAreCrossChecked(t *testing.T) {
	_, docs := dirs(t)
	cases := []struct{ name, from, to, want string }{
		{"policy for another account",
			`"system:serviceaccount:kube-system:gpulet"`, `"system:serviceaccount:gpu:gpulet"`,
			"ServiceAccount gpu/gpulet is not in the manifests"},
		{"policy that fails open", "failurePolicy: Fail\n  matchConstraints:\n    resourceRules:\n    - apiGroups: [\"\"]\n      apiVersions: [\"v1\"]\n      operations: [\"UPDATE\"]\n      resources: [\"nodes\", \"nodes/status\"]\n  matchConditions:\n  - name: node-agent",
			"failurePolicy: Ignore\n  matchConstraints:\n    resourceRules:\n    - apiGroups: [\"\"]\n      apiVersions: [\"v1\"]\n      operations: [\"UPDATE\"]\n      resources: [\"nodes\", \"nodes/status\"]\n  matchConditions:\n  - name: node-agent",
			"must be Fail"},
		{"binding without its policy", "  policyName: gpulet-node-agent", "  policyName: gpulet-node-agents",
			"gpulet-node-agents is not in the manifests"},
		{"network policy on another port", "      port: 12346", "      port: 12347",
			"12347 is not a container port"},
		{"network policy selects nothing", "      app.kubernetes.io/component: scheduler-extender\n  policyTypes",
			"      app.kubernetes.io/component: extender\n  policyTypes", "selects the pods of no workload"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := withChange(t, tc.from, tc.to)
			if err == nil {
				_, err = CheckObjects(objs, docs)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// withChange is deployWithExtender with `from` replaced by `to` in the
// policy files (the first that holds it), decoded again.
func withChange(t *testing.T, from, to string) ([]Object, error) {
	t.Helper()
	deploy, _ := dirs(t)
	var objs []Object
	for _, o := range deployWithExtender(t) {
		if !strings.Contains(o.Source, "policy.yaml") {
			objs = append(objs, o)
		}
	}
	replaced := false
	for _, f := range []string{"node-policy.yaml", "extender/node-policy.yaml", "extender/networkpolicy.yaml"} {
		data, err := os.ReadFile(filepath.Join(deploy, f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if !replaced && strings.Contains(text, from) {
			text = strings.Replace(text, from, to, 1)
			replaced = true
		}
		docs, err := SplitDocuments([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range docs {
			if d == nil {
				continue
			}
			o, err := Decode(d, fmt.Sprintf("%s#%d", f, i+1))
			if err != nil {
				return nil, err
			}
			objs = append(objs, o)
		}
	}
	if !replaced {
		t.Fatalf("%q is in none of the policy files", from)
	}
	return objs, nil
}
