package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/kubernetes/pkg/apis/rbac"
	"sigs.k8s.io/yaml"
)

// The checked-in manifests, relative to this package; GPULET_DEPLOY_DIR and
// GPULET_DOCS_DIR override them.
func dirs(t *testing.T) (deploy, docs string) {
	t.Helper()
	deploy, docs = os.Getenv("GPULET_DEPLOY_DIR"), os.Getenv("GPULET_DOCS_DIR")
	if deploy == "" {
		deploy = filepath.Join("..", "..", "deploy")
	}
	if docs == "" {
		docs = filepath.Join("..", "..", "docs")
	}
	return deploy, docs
}

func TestDeployManifestsAreValid(t *testing.T) {
	deploy, docs := dirs(t)
	report, err := CheckDir(deploy, docs)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range report.Objects {
		kinds[o.GVK.Kind]++
	}
	if kinds["DaemonSet"] != 1 || kinds["ConfigMap"] != 1 {
		t.Errorf("want one DaemonSet and one ConfigMap, got %v", kinds)
	}
	if len(report.ConfigFiles) != 1 || report.ConfigFiles[0].Path != "/etc/gpulet/config.yaml" {
		t.Fatalf("config files: %+v", report.ConfigFiles)
	}
	// The extracted file is what gpulet will read: write it and read it
	// back as a file, as `gpulet plugin --config-file` would.
	out := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(out, []byte(report.ConfigFiles[0].Data), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckConfigSyntax(string(data)); err != nil {
		t.Fatal(err)
	}
}

// The node agent may read and patch Nodes (to label its own) and nothing
// else: no other resource, no other verb, and no role bound to anyone but
// gpulet's service account.
func TestRBACGrantsOnlyGetAndPatchOnNodes(t *testing.T) {
	deploy, _ := dirs(t)
	objs, err := LoadDir(deploy)
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.ClusterRoles) != 1 || len(set.Bindings) != 1 {
		t.Fatalf("want one ClusterRole and one binding, got %d and %d", len(set.ClusterRoles), len(set.Bindings))
	}
	for name, role := range set.ClusterRoles {
		if len(role.Rules) != 1 {
			t.Fatalf("ClusterRole %s: want one rule, got %+v", name, role.Rules)
		}
		r := role.Rules[0]
		if fmt.Sprint(r.APIGroups) != "[]" || fmt.Sprint(r.Resources) != "[nodes]" ||
			fmt.Sprint(r.Verbs) != "[get patch]" || len(r.ResourceNames) != 0 || len(r.NonResourceURLs) != 0 {
			t.Errorf("ClusterRole %s: want get and patch on nodes only, got %+v", name, r)
		}
	}
	b := set.Bindings[0]
	if len(b.Subjects) != 1 || b.Subjects[0].Name != "gpulet" || b.Subjects[0].Namespace != "kube-system" {
		t.Errorf("binding %s: want gpulet's service account only, got %+v", b.Name, b.Subjects)
	}
}

func TestBindingsMustNameObjectsOfTheManifests(t *testing.T) {
	_, others := daemonSetDoc(t)
	doc := []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: stray
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: gpulet
  namespace: kube-system
`)
	obj, err := Decode(doc, "stray.yaml#1")
	if err != nil {
		t.Fatal(err)
	}
	var objs []Object
	for _, o := range others {
		if o.GVK.Kind != "ClusterRoleBinding" {
			objs = append(objs, o)
		}
	}
	set, err := NewSet(append(objs, obj))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Bindings) != 1 {
		t.Fatalf("bindings: %+v", set.Bindings)
	}
	if err := set.checkBinding(set.Bindings[0]); err == nil || !strings.Contains(err.Error(), "cluster-admin is not in the manifests") {
		t.Errorf("got %v", err)
	}
}

// A RoleBinding must bind a Role of the manifests in its own namespace (the
// NodeFeature grant of daemonset.yaml), to service accounts of the manifests.
func TestRoleBindingsMustNameObjectsOfTheManifests(t *testing.T) {
	_, others := daemonSetDoc(t)
	binding := func(ns, role, account string) Object {
		doc := []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: stray
  namespace: ` + ns + `
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: ` + role + `
subjects:
- kind: ServiceAccount
  name: ` + account + `
  namespace: kube-system
`)
		obj, err := Decode(doc, "stray.yaml#1")
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	var objs []Object
	for _, o := range others {
		if o.GVK.Kind != "RoleBinding" {
			objs = append(objs, o)
		}
	}
	for _, c := range []struct{ ns, role, account, want string }{
		{"kube-system", "gpulet-node-features", "gpulet", ""},
		{"kube-system", "admin", "gpulet", "Role admin is not in the manifests in namespace kube-system"},
		{"default", "gpulet-node-features", "gpulet", "Role gpulet-node-features is not in the manifests in namespace default"},
		{"kube-system", "gpulet-node-features", "someone", "ServiceAccount kube-system/someone is not in the manifests"},
	} {
		set, err := NewSet(append(append([]Object{}, objs...), binding(c.ns, c.role, c.account)))
		if err != nil {
			t.Fatal(err)
		}
		if len(set.RoleBindings) != 1 {
			t.Fatalf("role bindings: %+v", set.RoleBindings)
		}
		err = set.checkRoleBinding(set.RoleBindings[0])
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s/%s for %s: got %v, want %q", c.ns, c.role, c.account, err, c.want)
		}
	}
}

// daemonSetDoc returns the DaemonSet document of deploy/daemonset.yaml and
// every other document of the deploy directory, so a test can mutate the
// DaemonSet and check the whole set again.
func daemonSetDoc(t *testing.T) (ds map[string]interface{}, others []Object) {
	t.Helper()
	deploy, _ := dirs(t)
	data, err := os.ReadFile(filepath.Join(deploy, "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := SplitDocuments(data)
	if err != nil {
		t.Fatal(err)
	}
	for i, doc := range docs {
		if doc == nil {
			continue
		}
		var m map[string]interface{}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		if m["kind"] == "DaemonSet" {
			ds = m
			continue
		}
		obj, err := Decode(doc, "daemonset.yaml#"+string(rune('1'+i)))
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, obj)
	}
	cm, err := LoadFile(filepath.Join(deploy, "configmap-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if ds == nil {
		t.Fatal("no DaemonSet in daemonset.yaml")
	}
	return ds, append(others, cm...)
}

// at walks a path of map keys and list indexes ("spec", "template", 0, ...).
func at(t *testing.T, v interface{}, path ...interface{}) interface{} {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]interface{})[k]
		case int:
			v = v.([]interface{})[k]
		}
		if v == nil {
			t.Fatalf("no %v in the DaemonSet", path)
		}
	}
	return v
}

func container(t *testing.T, ds map[string]interface{}) map[string]interface{} {
	return at(t, ds, "spec", "template", "spec", "containers", 0).(map[string]interface{})
}

func podSpec(t *testing.T, ds map[string]interface{}) map[string]interface{} {
	return at(t, ds, "spec", "template", "spec").(map[string]interface{})
}

func volume(t *testing.T, ds map[string]interface{}, name string) map[string]interface{} {
	for _, v := range podSpec(t, ds)["volumes"].([]interface{}) {
		if m := v.(map[string]interface{}); m["name"] == name {
			return m
		}
	}
	t.Fatalf("no volume %q", name)
	return nil
}

func TestBrokenDaemonSetIsRejected(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(t *testing.T, ds map[string]interface{})
		raw    func(doc string) string // applied to the YAML text instead
		want   string                  // substring of the error
	}{
		{
			name: "unmutated copy passes",
			want: "",
		},
		{
			name: "unknown field",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				container(t, ds)["securityContext"].(map[string]interface{})["privilegd"] = false
			},
			want: `unknown field "spec.template.spec.containers[0].securityContext.privilegd"`,
		},
		{
			name: "misplaced field",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				podSpec(t, ds)["hostPath"] = "/"
			},
			want: `unknown field "spec.template.spec.hostPath"`,
		},
		{
			name: "duplicate field",
			raw: func(doc string) string {
				return strings.Replace(doc, "terminationGracePeriodSeconds: 30",
					"terminationGracePeriodSeconds: 30\n      terminationGracePeriodSeconds: 60", 1)
			},
			want: `key "terminationGracePeriodSeconds" already set in map`,
		},
		{
			name: "wrong type",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				podSpec(t, ds)["terminationGracePeriodSeconds"] = "thirty"
			},
			want: "terminationGracePeriodSeconds",
		},
		{
			name: "bad hostPath type",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				volume(t, ds, "device-plugins")["hostPath"].(map[string]interface{})["type"] = "Dir"
			},
			want: `spec.template.spec.volumes[0].hostPath.type: Unsupported value: "Dir"`,
		},
		{
			name: "relative hostPath",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				volume(t, ds, "cdi")["hostPath"].(map[string]interface{})["path"] = "../cdi"
			},
			want: "hostPath.path",
		},
		{
			name: "selector does not match the template",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				at(t, ds, "spec", "selector", "matchLabels").(map[string]interface{})["app.kubernetes.io/name"] = "other"
			},
			want: "`selector` does not match template `labels`",
		},
		{
			name: "bidirectional propagation without privilege",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				at(t, container(t, ds), "volumeMounts", 2).(map[string]interface{})["mountPropagation"] = "Bidirectional"
			},
			want: "Bidirectional mount propagation is available only to privileged containers",
		},
		{
			name: "no rolling update possible",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				at(t, ds, "spec", "updateStrategy", "rollingUpdate").(map[string]interface{})["maxUnavailable"] = 0
			},
			want: "maxUnavailable",
		},
		{
			name: "a warning is an error",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				podSpec(t, ds)["nodeSelector"] = map[string]interface{}{"beta.kubernetes.io/arch": "amd64"}
			},
			want: "the API server would warn",
		},
		{
			name: "no namespace",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				delete(ds["metadata"].(map[string]interface{}), "namespace")
			},
			want: "metadata.namespace: must be set",
		},
		{
			name: "unknown kind",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				ds["kind"] = "StatefulSet"
			},
			want: `kind "StatefulSet" in apiVersion "apps/v1" is not one this check knows`,
		},
		{
			name: "old apiVersion",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				ds["apiVersion"] = "extensions/v1beta1"
			},
			want: "is not one this check knows",
		},
		{
			name: "misspelt environment variable",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				c := container(t, ds)
				c["env"] = append(c["env"].([]interface{}),
					map[string]interface{}{"name": "FAIL_ON_INIT_EROR", "value": "false"})
			},
			want: "FAIL_ON_INIT_EROR is not a variable gpulet documents",
		},
		{
			name: "GPUs by NVIDIA_VISIBLE_DEVICES without CAP_SYS_ADMIN",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				caps := container(t, ds)["securityContext"].(map[string]interface{})["capabilities"].(map[string]interface{})
				delete(caps, "add")
			},
			want: "NVIDIA_VISIBLE_DEVICES=all without CAP_SYS_ADMIN",
		},
		{
			name: "missing ConfigMap",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				volume(t, ds, "config")["configMap"].(map[string]interface{})["name"] = "gpulet-cfg"
			},
			want: "ConfigMap kube-system/gpulet-cfg is not in the manifests",
		},
		{
			name: "CONFIG_FILE outside every mount",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				at(t, container(t, ds), "env", 0).(map[string]interface{})["value"] = "/etc/config.yaml"
			},
			want: "no volume is mounted above it",
		},
		{
			name:   "directory of configurations",
			mutate: func(t *testing.T, ds map[string]interface{}) { perNode(t, ds) },
		},
		{
			name: "directory of configurations, some keys only",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				perNode(t, ds)
				volume(t, ds, "config")["configMap"].(map[string]interface{})["items"] = []interface{}{
					map[string]interface{}{"key": "config.yaml", "path": "config.yaml"}}
			},
			want: "volume config projects only some keys (items)",
		},
		{
			name: "directory of configurations, default not in it",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				perNode(t, ds)
				c := container(t, ds)
				c["env"] = append(c["env"].([]interface{}), map[string]interface{}{"name": "DEFAULT_CONFIG", "value": "mig"})
			},
			want: `DEFAULT_CONFIG=mig: ConfigMap kube-system/gpulet-config has no key "mig"`,
		},
		{
			name: "directory of configurations, not a mount point",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				perNode(t, ds)
				at(t, container(t, ds), "env", 0).(map[string]interface{})["value"] = "/etc/gpulet/configs"
			},
			want: "CONFIG_FILE_SRCDIR=/etc/gpulet/configs: no volume is mounted there",
		},
		{
			name: "missing service account",
			mutate: func(t *testing.T, ds map[string]interface{}) {
				podSpec(t, ds)["serviceAccountName"] = "gpulet-sa"
			},
			want: "ServiceAccount kube-system/gpulet-sa is not in the manifests",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds, others := daemonSetDoc(t)
			if tc.mutate != nil {
				tc.mutate(t, ds)
			}
			doc, err := yaml.Marshal(ds)
			if err != nil {
				t.Fatal(err)
			}
			text := string(doc)
			if tc.raw != nil {
				// Edit the original file's text: a marshalled map cannot
				// hold a duplicate key.
				deploy, _ := dirs(t)
				orig, err := os.ReadFile(filepath.Join(deploy, "daemonset.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				docs, _ := SplitDocuments(orig)
				text = tc.raw(string(docs[len(docs)-1]))
			}
			_, docsDir := dirs(t)
			err = checkWith(text, others, docsDir)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, tc.want)
			}
		})
	}
}

// perNode turns the DaemonSet into one reading a configuration per node:
// CONFIG_FILE_SRCDIR=/etc/gpulet (the config volume's mount point) in place
// of CONFIG_FILE, the whole ConfigMap in the volume.
func perNode(t *testing.T, ds map[string]interface{}) {
	env := at(t, container(t, ds), "env", 0).(map[string]interface{})
	if env["name"] != "CONFIG_FILE" {
		t.Fatalf("the first variable is %v, not CONFIG_FILE", env["name"])
	}
	env["name"], env["value"] = "CONFIG_FILE_SRCDIR", "/etc/gpulet"
	delete(volume(t, ds, "config")["configMap"].(map[string]interface{}), "items")
}

func checkWith(dsDoc string, others []Object, docsDir string) error {
	obj, err := Decode([]byte(dsDoc), "mutated")
	if err != nil {
		return err
	}
	_, err = CheckObjects(append([]Object{obj}, others...), docsDir)
	return err
}

func TestConfigSyntax(t *testing.T) {
	cases := []struct {
		config string
		want   string
	}{
		{"version: v1\n", ""},
		{"version: v1\nflags:\n  migStrategy: mixed\n", ""},
		{"flags: {}\n", "no `version:` key"},
		{"version: v2\n", "version: v2, expected v1"},
		{"version: v1\nversion: v1\n", "not a YAML mapping"},
		{"- version: v1\n", "not a YAML mapping"},
		{"version: [v1\n", "not a YAML mapping"},
	}
	for _, tc := range cases {
		err := CheckConfigSyntax(tc.config)
		if tc.want == "" && err != nil {
			t.Errorf("%q: unexpected error %v", tc.config, err)
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: error %v, want %q", tc.config, err, tc.want)
		}
	}
}

func TestBrokenConfigMapIsRejected(t *testing.T) {
	base := `apiVersion: v1
kind: ConfigMap
metadata:
  name: gpulet-config
  namespace: kube-system
data:
  config.yaml: |
    version: v1
`
	if _, err := Decode([]byte(base), "cm"); err != nil {
		t.Fatalf("base ConfigMap: %v", err)
	}
	cases := map[string]struct{ doc, want string }{
		"bad key":        {strings.Replace(base, "config.yaml:", "config/yaml:", 1), "data[config/yaml]"},
		"bad name":       {strings.Replace(base, "name: gpulet-config", "name: Gpulet_Config", 1), "metadata.name"},
		"unknown field":  {strings.Replace(base, "\ndata:", "\ndatas:", 1), `unknown field "datas"`},
		"namespace kind": {strings.Replace(base, "kind: ConfigMap", "kind: Namespace", 1), "unknown field"},
	}
	for name, tc := range cases {
		_, err := Decode([]byte(tc.doc), name)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

func TestNamespaceAndServiceAccount(t *testing.T) {
	good := `apiVersion: v1
kind: Namespace
metadata:
  name: gpulet
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: gpulet
  namespace: gpulet
automountServiceAccountToken: false
`
	docs, err := SplitDocuments([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		if _, err := Decode(d, "doc"); err != nil {
			t.Errorf("document %d: %v", i+1, err)
		}
	}
	bad := map[string]struct{ doc, want string }{
		"namespace with a namespace": {"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpulet\n  namespace: kube-system\n", "cluster-scoped"},
		"bad namespace name":         {"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpu.let\n", "metadata.name"},
		"service account field":      {"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: gpulet\n  namespace: gpulet\nautomount: false\n", `unknown field "automount"`},
	}
	for name, tc := range bad {
		_, err := Decode([]byte(tc.doc), name)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

func TestServiceAndServiceMonitor(t *testing.T) {
	_, docs := dirs(t)
	// deploy/'s DaemonSet with a metrics port, as the chart renders it.
	ds, others := daemonSetDoc(t)
	c := container(t, ds)
	c["ports"] = []interface{}{map[string]interface{}{"name": "metrics", "containerPort": 9400}}
	dsText, err := yaml.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	dsObj, err := Decode(dsText, "daemonset with a port")
	if err != nil {
		t.Fatal(err)
	}
	const service = `apiVersion: v1
kind: Service
metadata:
  name: gpulet-metrics
  namespace: kube-system
  labels:
    app.kubernetes.io/name: gpulet
spec:
  clusterIP: None
  selector:
    app.kubernetes.io/name: gpulet
  ports:
  - name: metrics
    port: 9400
    targetPort: metrics
`
	const monitor = `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: gpulet
  namespace: kube-system
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: gpulet
  namespaceSelector:
    matchNames: [kube-system]
  endpoints:
  - port: metrics
    path: /metrics
    interval: 30s
`
	cases := []struct {
		name, service, monitor, want string
	}{
		{"as the chart writes them", service, monitor, ""},
		{"Service selects nothing", strings.Replace(service, "    app.kubernetes.io/name: gpulet\n  ports:", "    app.kubernetes.io/name: other\n  ports:", 1), monitor,
			"selects the pods of no DaemonSet"},
		{"target port not in the pod", strings.Replace(service, "targetPort: metrics", "targetPort: http", 1), monitor,
			"spec.ports[0].targetPort: http is not a container port"},
		{"bad Service port", strings.Replace(service, "port: 9400", "port: 0", 1), monitor, "spec.ports[0].port"},
		{"ServiceMonitor port not in the Service", service, strings.Replace(monitor, "- port: metrics", "- port: web", 1),
			`has no port named "web"`},
		{"ServiceMonitor selects nothing", service, strings.Replace(monitor, "matchNames: [kube-system]", "matchNames: [monitoring]", 1),
			"selects no Service"},
		{"ServiceMonitor unknown field", service, strings.Replace(monitor, "    interval: 30s", "    intervall: 30s", 1),
			`unknown field "intervall"`},
		{"ServiceMonitor bad interval", service, strings.Replace(monitor, "interval: 30s", "interval: half a minute", 1),
			"spec.endpoints[0].interval"},
		{"ServiceMonitor bad selector", service, strings.Replace(monitor, "app.kubernetes.io/name: gpulet\n  namespaceSelector", "app.kubernetes.io/name: -gpulet-\n  namespaceSelector", 1),
			"spec.selector"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]Object{dsObj}, others...)
			var err error
			for i, doc := range []string{tc.service, tc.monitor} {
				var o Object
				if o, err = Decode([]byte(doc), fmt.Sprintf("doc %d", i)); err != nil {
					break
				}
				objs = append(objs, o)
			}
			if err == nil {
				_, err = CheckObjects(objs, docs)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// deploy/optional/memory-shares-rbac.yaml grants the memory-share node
// agent exactly what it calls, to gpulet's service account of deploy/, as
// the chart does with memoryShares.enabled.
func TestMemorySharesRBAC(t *testing.T) {
	deploy, _ := dirs(t)
	objs, err := LoadDir(deploy)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := LoadFile(filepath.Join(deploy, "optional", "memory-shares-rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(append(objs, extra...))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range extra {
		if b, ok := o.Internal.(*rbac.ClusterRoleBinding); ok {
			if err := set.checkBinding(b); err != nil {
				t.Errorf("%s: %v", o.Source, err)
			}
		}
		if role, ok := o.Versioned.(*rbacv1.ClusterRole); ok {
			if got := fmt.Sprint(role.Rules); got != MemorySharesRules {
				t.Errorf("%s: rules %s, want %s", o.Source, got, MemorySharesRules)
			}
		}
	}
}
