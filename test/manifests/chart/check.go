package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"gpulet.dev/test/manifests"
)

// Rendered is what one Case rendered, checked, with the parts the cases'
// expectations look at (as decoded, not defaulted).
type Rendered struct {
	Objects        []manifests.Object
	DaemonSet      *appsv1.DaemonSet
	ConfigMap      *corev1.ConfigMap // nil: the chart made none
	Service        *corev1.Service   // the metrics Service
	ServiceMonitor *manifests.ServiceMonitor
	// The scheduler extender's (extender.enabled): nil when not rendered.
	Extender              *appsv1.Deployment
	ExtenderService       *corev1.Service
	ExtenderNetworkPolicy *networkingv1.NetworkPolicy
	Secrets               map[string]*corev1.Secret // by name
}

// extenderComponent is the component label of the extender's objects.
const extenderComponent = "scheduler-extender"

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
	r := &Rendered{Objects: objs, Secrets: map[string]*corev1.Secret{}}
	for _, o := range objs {
		switch v := o.Versioned.(type) {
		case *appsv1.DaemonSet:
			r.DaemonSet = v
		case *corev1.ConfigMap:
			r.ConfigMap = v
		case *corev1.Service:
			if v.Labels["app.kubernetes.io/component"] == extenderComponent {
				r.ExtenderService = v
			} else {
				r.Service = v
			}
		case *manifests.ServiceMonitor:
			r.ServiceMonitor = v
		case *appsv1.Deployment:
			r.Extender = v
		case *networkingv1.NetworkPolicy:
			r.ExtenderNetworkPolicy = v
		case *corev1.Secret:
			r.Secrets[v.Name] = v
		}
	}
	if c.Expect != nil {
		if err := c.Expect(r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// deployFiles are deploy/'s manifests the chart's defaults render, for
// the release "gpulet" in kube-system.
var deployFiles = []string{"daemonset.yaml", "node-policy.yaml", "configmap-example.yaml",
	"extender/extender.yaml", "extender/node-policy.yaml", "extender/networkpolicy.yaml"}

// generatedSecrets are what the chart's defaults render beyond deploy/:
// the extender's TLS material, which deploy/ leaves to the operator.
var generatedSecrets = []string{"Secret kube-system/gpulet-extender-scheduler-client", "Secret kube-system/gpulet-extender-tls"}

// CompareWithDeploy renders the chart with its defaults as the release
// "gpulet" in kube-system and compares every object with deploy/'s of the
// same kind and name (deployFiles), field by field as decoded, except:
// the ConfigMap's metadata only (its config differs: the example
// time-slices, the chart's default does not); the extender's Deployment
// without its volumes (deploy/ reads the client CA from a Secret of its
// own, the chart from ca.crt of the serving Secret); the NetworkPolicy's
// peers (deploy/ lists placeholders to replace, the chart's default admits
// no one). The generated Secrets are the chart's alone.
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
	var deployObjs []manifests.Object
	for _, f := range deployFiles {
		objs, err := manifests.LoadFile(filepath.Join(deployDir, f))
		if err != nil {
			return err
		}
		deployObjs = append(deployObjs, objs...)
	}
	got, want := byName(chartObjs), byName(deployObjs)
	for _, n := range generatedSecrets {
		if _, ok := got[n]; !ok {
			return fmt.Errorf("the chart's defaults render no %s", n)
		}
		delete(got, n)
	}
	names, wantNames := sortedNames(got), sortedNames(want)
	if strings.Join(names, ", ") != strings.Join(wantNames, ", ") {
		return fmt.Errorf("the chart's defaults render %s; deploy/ has %s", strings.Join(names, ", "), strings.Join(wantNames, ", "))
	}
	for _, n := range names {
		g, w := comparable(got[n].Versioned), comparable(want[n].Versioned)
		if !apiequality.Semantic.DeepEqual(g, w) {
			return fmt.Errorf("%s: the chart's defaults differ from deploy/:\n%s", n, diff(g, w))
		}
	}
	return nil
}

func byName(objs []manifests.Object) map[string]manifests.Object {
	m := map[string]manifests.Object{}
	for _, o := range objs {
		m[o.Name()] = o
	}
	return m
}

func sortedNames(m map[string]manifests.Object) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// comparable is the part of an object CompareWithDeploy compares.
func comparable(obj runtime.Object) interface{} {
	switch v := obj.(type) {
	case *corev1.ConfigMap:
		return v.ObjectMeta
	case *appsv1.Deployment:
		d := v.DeepCopy()
		d.Spec.Template.Spec.Volumes = nil
		c := &d.Spec.Template.Spec.Containers[0]
		c.VolumeMounts = nil
		for i, a := range c.Args {
			if strings.HasPrefix(a, "--client-ca-file=") {
				c.Args[i] = "--client-ca-file=<ca.crt>"
			}
		}
		return d
	case *networkingv1.NetworkPolicy:
		np := v.DeepCopy()
		np.Spec.Ingress = nil
		return np
	}
	return obj
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
