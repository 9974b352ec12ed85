package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"gpulet.dev/test/manifests"
)

// Rendered is what one Case rendered, checked, with the parts the cases'
// expectations look at (as decoded, not defaulted).
type Rendered struct {
	Objects        []manifests.Object
	DaemonSet      *appsv1.DaemonSet
	ConfigMap      *corev1.ConfigMap // nil: the chart made none
	Service        *corev1.Service
	ServiceMonitor *manifests.ServiceMonitor
}

// Container is the DaemonSet's gpulet container.
func (r *Rendered) Container() *corev1.Container {
	return &r.DaemonSet.Spec.Template.Spec.Containers[0]
}

// Env is the value of one of the container's variables and whether it is set.
func (r *Rendered) Env(name string) (string, bool) {
	for _, e := range r.Container().Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// Volume is the pod's volume of that name, or nil.
func (r *Rendered) Volume(name string) *corev1.Volume {
	for i, v := range r.DaemonSet.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return &r.DaemonSet.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

// Check lints the chart with the case's values, renders it, checks every
// object as the API server would and all of them together (with the
// objects the case says the user creates beside the release) as package
// manifests does for deploy/, then checks the case's expectations.
func Check(chartDir, docsDir string, c Case) (*Rendered, error) {
	release, namespace := c.release(), c.namespace()
	// Each step gets its own copy of the values.
	vals, err := Values(c.Values)
	if err != nil {
		return nil, err
	}
	if err := Lint(chartDir, namespace, vals); err != nil {
		return nil, err
	}
	ch, err := Load(chartDir)
	if err != nil {
		return nil, err
	}
	vals, err = Values(c.Values)
	if err != nil {
		return nil, err
	}
	text, err := Template(ch, release, namespace, vals)
	if err != nil {
		return nil, err
	}
	objs, err := Decode(text, "helm template")
	if err != nil {
		return nil, err
	}
	all := objs
	if c.Extra != "" {
		extra, err := Decode(c.Extra, "objects beside the release")
		if err != nil {
			return nil, err
		}
		all = append(all, extra...)
	}
	if _, err := manifests.CheckObjects(all, docsDir); err != nil {
		return nil, err
	}
	r := &Rendered{Objects: objs}
	for _, o := range objs {
		switch v := o.Versioned.(type) {
		case *appsv1.DaemonSet:
			r.DaemonSet = v
		case *corev1.ConfigMap:
			r.ConfigMap = v
		case *corev1.Service:
			r.Service = v
		case *manifests.ServiceMonitor:
			r.ServiceMonitor = v
		}
	}
	if c.Expect != nil {
		if err := c.Expect(r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// CompareWithDeploy renders the chart with its defaults as the release
// "gpulet" in kube-system and compares the ServiceAccount and DaemonSet with
// deploy/daemonset.yaml's, field by field as decoded, and the ConfigMap's
// metadata with deploy/configmap-example.yaml's (its config differs: the
// example time-slices, the chart's default does not).
func CompareWithDeploy(chartDir, deployDir string) error {
	ch, err := Load(chartDir)
	if err != nil {
		return err
	}
	text, err := Template(ch, DefaultRelease, DefaultNamespace, map[string]interface{}{})
	if err != nil {
		return err
	}
	chartObjs, err := Decode(text, "helm template (defaults)")
	if err != nil {
		return err
	}
	deployObjs, err := manifests.LoadFile(filepath.Join(deployDir, "daemonset.yaml"))
	if err != nil {
		return err
	}
	policy, err := manifests.LoadFile(filepath.Join(deployDir, "node-policy.yaml"))
	if err != nil {
		return err
	}
	deployObjs = append(deployObjs, policy...)
	example, err := manifests.LoadFile(filepath.Join(deployDir, "configmap-example.yaml"))
	if err != nil {
		return err
	}
	byName := func(objs []manifests.Object) map[string]manifests.Object {
		m := map[string]manifests.Object{}
		for _, o := range objs {
			m[o.Name()] = o
		}
		return m
	}
	got := byName(chartObjs)
	want := byName(append(deployObjs, example...))
	var names []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	var wantNames []string
	for n := range want {
		wantNames = append(wantNames, n)
	}
	sort.Strings(wantNames)
	if strings.Join(names, ", ") != strings.Join(wantNames, ", ") {
		return fmt.Errorf("the chart's defaults render %s; deploy/ has %s", strings.Join(names, ", "), strings.Join(wantNames, ", "))
	}
	for _, n := range names {
		g, w := got[n].Versioned, want[n].Versioned
		if gc, ok := g.(*corev1.ConfigMap); ok {
			wc := w.(*corev1.ConfigMap)
			if !apiequality.Semantic.DeepEqual(gc.ObjectMeta, wc.ObjectMeta) {
				return fmt.Errorf("%s: metadata differs from deploy/configmap-example.yaml's:\n%s", n, diff(gc.ObjectMeta, wc.ObjectMeta))
			}
			continue
		}
		if !apiequality.Semantic.DeepEqual(g, w) {
			return fmt.Errorf("%s: the chart's defaults differ from deploy/:\n%s", n, diff(g, w))
		}
	}
	return compareExtenderPolicy(ch, deployDir)
}

// compareExtenderPolicy renders the extender (release "gpulet" in
// kube-system) and compares its admission policy and binding with
// deploy/extender/node-policy.yaml's.
func compareExtenderPolicy(ch *chart.Chart, deployDir string) error {
	vals, err := Values(extenderValues)
	if err != nil {
		return err
	}
	text, err := Template(ch, DefaultRelease, DefaultNamespace, vals)
	if err != nil {
		return err
	}
	objs, err := Decode(text, "helm template (extender)")
	if err != nil {
		return err
	}
	want, err := manifests.LoadFile(filepath.Join(deployDir, "extender", "node-policy.yaml"))
	if err != nil {
		return err
	}
	for _, w := range want {
		found := false
		for _, g := range objs {
			if g.Name() != w.Name() {
				continue
			}
			found = true
			if !apiequality.Semantic.DeepEqual(g.Versioned, w.Versioned) {
				return fmt.Errorf("%s: the chart's differs from deploy/extender/node-policy.yaml:\n%s", w.Name(), diff(g.Versioned, w.Versioned))
			}
		}
		if !found {
			return fmt.Errorf("%s: deploy/extender/node-policy.yaml has it, the chart with extender.enabled does not", w.Name())
		}
	}
	return nil
}

// diff shows the lines of two objects' YAML that differ.
func diff(got, want interface{}) string {
	g, _ := yaml.Marshal(got)
	w, _ := yaml.Marshal(want)
	gl, wl := strings.Split(string(g), "\n"), strings.Split(string(w), "\n")
	var out []string
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var a, b string
		if i < len(gl) {
			a = gl[i]
		}
		if i < len(wl) {
			b = wl[i]
		}
		if a != b {
			out = append(out, fmt.Sprintf("line %d\n  chart:   %s\n  deploy/: %s", i+1, a, b))
		}
		if len(out) == 5 {
			break
		}
	}
	return strings.Join(out, "\n")
}

// CheckAll runs Check on every case of Cases, CompareWithDeploy, and
// CheckCoverage with the values table of docsDir/helm.md. It returns the
// names of the cases checked.
func CheckAll(chartDir, docsDir, deployDir string) ([]string, error) {
	var names []string
	for _, c := range Cases() {
		if _, err := Check(chartDir, docsDir, c); err != nil {
			return names, fmt.Errorf("values %q: %w", c.Name, err)
		}
		names = append(names, c.Name)
	}
	if err := CompareWithDeploy(chartDir, deployDir); err != nil {
		return names, err
	}
	doc, err := os.ReadFile(filepath.Join(docsDir, "helm.md"))
	if err != nil {
		return names, err
	}
	ch, err := Load(chartDir)
	if err != nil {
		return names, err
	}
	return names, CheckCoverage(ch.Values, DocumentedValues(string(doc)), Cases())
}
