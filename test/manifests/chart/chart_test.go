package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

// dirs are the checked-in chart, docs and deploy/ relative to this package;
// GPULET_DEPLOY_DIR and GPULET_DOCS_DIR override them.
func dirs(t *testing.T) (chartDir, docs, deploy string) {
	t.Helper()
	deploy, docs = os.Getenv("GPULET_DEPLOY_DIR"), os.Getenv("GPULET_DOCS_DIR")
	if deploy == "" {
		deploy = filepath.Join("..", "..", "..", "deploy")
	}
	if docs == "" {
		docs = filepath.Join("..", "..", "..", "docs")
	}
	return filepath.Join(deploy, "chart"), docs, deploy
}

func TestEveryCase(t *testing.T) {
	chartDir, docs, _ := dirs(t)
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if _, err := Check(chartDir, docs, c); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDefaultsAreDeploy(t *testing.T) {
	chartDir, _, deploy := dirs(t)
	if err := CompareWithDeploy(chartDir, deploy); err != nil {
		t.Fatal(err)
	}
}

func TestCoverage(t *testing.T) {
	chartDir, docs, _ := dirs(t)
	doc, err := os.ReadFile(filepath.Join(docs, "helm.md"))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	documented := DocumentedValues(string(doc))
	if err := CheckCoverage(ch.Values, documented, Cases()); err != nil {
		t.Fatal(err)
	}
	// The check notices each kind of gap.
	if err := CheckCoverage(ch.Values, documented[1:], Cases()); err == nil || !strings.Contains(err.Error(), "does not document") {
		t.Errorf("an undocumented value: %v", err)
	}
	if err := CheckCoverage(ch.Values, append(documented, "gfd.enabled"), Cases()); err == nil || !strings.Contains(err.Error(), "not in values.yaml") {
		t.Errorf("a documented value not in values.yaml: %v", err)
	}
	if err := CheckCoverage(ch.Values, documented, Cases()[:1]); err == nil || !strings.Contains(err.Error(), "no case") {
		t.Errorf("a value no case sets: %v", err)
	}
}

// Values that cannot work are refused by `helm template` or by the
// checks, with an error naming the value or field.
func TestBadValuesAreRejected(t *testing.T) {
	chartDir, docs, _ := dirs(t)
	cases := []struct {
		name, values, namespace, want string
	}{
		{"Service without metrics", "metrics:\n  service:\n    enabled: true\n", "",
			"metrics.service.enabled: the Service needs metrics.enabled=true"},
		{"ServiceMonitor without Service", "metrics:\n  enabled: true\n  serviceMonitor:\n    enabled: true\n", "",
			"metrics.serviceMonitor.enabled: the ServiceMonitor needs metrics.service.enabled=true"},
		{"default namespace", "", "default", `gpulet would be installed into "default"`},
		{"several configs, default not among them", "config:\n  map:\n    a: \"version: v1\"\n    b: \"version: v1\"\n  default: c\n", "",
			`config.default: "c" is not a key of config.map (keys: a, b)`},
		{"default not a configuration name", "config:\n  name: my-config\n  default: ../config.yaml\n", "", "/config/default"},
		{"unknown fallback strategy", "config:\n  name: my-config\n  fallbackStrategies: [named, first]\n", "",
			"/config/fallbackStrategies"},
		{"init container from the config with several configs",
			"config:\n  map:\n    a: \"version: v1\"\n    b: \"version: v1\"\npassthrough:\n  enabled: true\n  bind:\n    fromConfig: true\n", "",
			"passthrough.bind.fromConfig: the init container reads one config file, but each node picks its own (config.name, or several entries in config.map)"},
		{"init container from the config with an existing ConfigMap",
			"config:\n  name: my-config\npassthrough:\n  enabled: true\n  bind:\n    fromConfig: true\n", "",
			"passthrough.bind.fromConfig: the init container reads one config file"},
		{"chosen config missing", "config:\n  default: mig\n", "",
			`config.default: "mig" is not a key of config.map (keys: config.yaml)`},
		{"misspelt variable", "env:\n- name: DP_DISABLE_HEALTHCHEKS\n  value: all\n", "",
			"DP_DISABLE_HEALTHCHEKS is not a variable gpulet documents"},
		{"privileged without dropping the rest", "securityContext:\n  privileged: true\n", "",
			"cannot set `allowPrivilegeEscalation` to false and `privileged` to true"},
		{"bad ServiceMonitor interval",
			"metrics:\n  enabled: true\n  service:\n    enabled: true\n  serviceMonitor:\n    enabled: true\n    interval: 30 seconds\n", "",
			"spec.endpoints[0].interval"},
		{"init container without passthrough", "passthrough:\n  bind:\n    gpus: [\"0000:9d:00.0\"]\n", "",
			"passthrough.bind.gpus: needs passthrough.enabled"},
		{"init container from the config without passthrough", "passthrough:\n  bind:\n    fromConfig: true\n", "",
			"passthrough.bind.fromConfig: needs passthrough.enabled"},
		{"bad fromConfig", "passthrough:\n  enabled: true\n  bind:\n    fromConfig: yes please\n", "",
			"/passthrough/bind/fromConfig"},
		{"bad GPU to bind", "passthrough:\n  enabled: true\n  bind:\n    gpus: [gpu4]\n", "",
			"/passthrough/bind/gpus/0"},
		{"UUID to bind", "passthrough:\n  enabled: true\n  bind:\n    gpus: [\"0000:9d:00.0\", GPU-cccd02ab-8116-568f-884a-21353f0a0a66]\n", "",
			"/passthrough/bind/gpus/1"},
		{"bad port", "metrics:\n  enabled: true\n  port: 70000\n", "", "/metrics/port"},
		{"allowed name with a comma", "extender:\n  tls:\n    allowedClientNames: [\"a,b\"]\n", "",
			"/extender/tls/allowedClientNames/0"},
		{"bad NetworkPolicy peer", "extender:\n  networkPolicy:\n    from:\n    - ipBlock:\n        cidr: control-plane\n", "",
			"spec.ingress[0].from[0].ipBlock.cidr"},
		{"bad extender policy", "extender:\n  defaultPolicy: fullest\n", "", "/extender/defaultPolicy"},
		{"bad pull policy", "image:\n  pullPolicy: Sometimes\n", "", "/image/pullPolicy"},
		{"misspelt value", "migStratgy: mixed\n", "", "migStratgy"},
		{"bad setting", "migStrategy: Mixed\n", "", "/migStrategy"},
		{"bad device list strategy", "deviceListStrategy: envvar,cdi\n", "", "/deviceListStrategy"},
		{"NVIDIA's value gpulet's chart lacks", "gfd:\n  enabled: true\n", "", "gfd"},
		{"relative driver root", "nvidiaDriverRoot: run/nvidia/driver\n", "", "/nvidiaDriverRoot"},
		{"unknown field through a value", "resources:\n  limit:\n    cpu: 1\n", "", `unknown field "spec.template.spec.containers[0].resources.limit"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(chartDir, docs, Case{Name: tc.name, Values: tc.values, Namespace: tc.namespace})
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, tc.want)
			}
		})
	}
}

// NOTES.txt names the one step left for the extender, with the release's
// names, and never prints key material.
func TestNotes(t *testing.T) {
	chartDir, _, _ := dirs(t)
	ch, err := Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		release, namespace, values string
		want, unwanted             []string
	}{
		{"gpulet", "kube-system", "",
			[]string{"kubectl -n kube-system get secret gpulet-extender-scheduler-client", "tls\\.key",
				"https://gpulet-extender.kube-system.svc:12346/gpu-memory", "NetworkPolicy gpulet-extender admits no one yet"}, nil},
		{"gpu", "gpu-system", "extender:\n  networkPolicy:\n    from:\n    - ipBlock:\n        cidr: 10.0.0.0/24\n",
			[]string{"gpu-system get secret gpu-gpulet-extender-scheduler-client", "https://gpu-gpulet-extender.gpu-system.svc:12346"},
			[]string{"admits no one"}},
		{"gpulet", "kube-system", "extender:\n  enabled: false\n", nil, []string{"extender"}},
	}
	for _, tc := range cases {
		vals, err := Values(tc.values)
		if err != nil {
			t.Fatal(err)
		}
		_, notes, err := Render(ch, tc.release, tc.namespace, vals)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(notes, w) {
				t.Errorf("%s in %s: NOTES.txt lacks %q:\n%s", tc.release, tc.namespace, w, notes)
			}
		}
		for _, u := range append(tc.unwanted, "PRIVATE KEY", "BEGIN") {
			if strings.Contains(notes, u) {
				t.Errorf("%s in %s: NOTES.txt has %q:\n%s", tc.release, tc.namespace, u, notes)
			}
		}
	}
}

// The rule ingressAdmission applies is Kubernetes': a NetworkPolicy
// without rules admits no one; a rule without `from`, or a policy whose
// types leave out Ingress, admits everyone.
func TestIngressAdmission(t *testing.T) {
	peer := networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/24"}}
	ingress := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	cases := []struct {
		name     string
		spec     networkingv1.NetworkPolicySpec
		everyone bool
		peers    int
	}{
		{"no rule", networkingv1.NetworkPolicySpec{PolicyTypes: ingress}, false, 0},
		{"no rule, no types", networkingv1.NetworkPolicySpec{}, false, 0},
		{"rule without from", networkingv1.NetworkPolicySpec{PolicyTypes: ingress,
			Ingress: []networkingv1.NetworkPolicyIngressRule{{}}}, true, 0},
		{"egress only", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}, true, 0},
		{"one peer", networkingv1.NetworkPolicySpec{PolicyTypes: ingress,
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{peer}}}}, false, 1},
	}
	for _, tc := range cases {
		everyone, peers := ingressAdmission(&networkingv1.NetworkPolicy{Spec: tc.spec})
		if everyone != tc.everyone || len(peers) != tc.peers {
			t.Errorf("%s: everyone %v, %d peers; want %v, %d", tc.name, everyone, len(peers), tc.everyone, tc.peers)
		}
	}
}

func TestDocumentedValues(t *testing.T) {
	doc := "# Helm\n| `x` | no |\n## Values\n\n| value | default |\n|---|---|\n| `a.b` | 1 |\n| `c` | 2 |\n## Other\n| `d` | 3 |\n"
	got := DocumentedValues(doc)
	if strings.Join(got, ",") != "a.b,c" {
		t.Errorf("got %v", got)
	}
}
