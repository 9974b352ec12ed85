package chart

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// cluster answers the chart's lookup calls from a fake API server holding
// the given Secrets, as `helm upgrade` would from the real one.
type cluster struct{ client dynamic.Interface }

func (c cluster) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: strings.ToLower(kind) + "s"}
	return c.client.Resource(gvr), true, nil
}

// renderUpgrade renders the chart with its defaults as `helm upgrade` of
// release gpulet in kube-system does, against a cluster holding secrets,
// and returns the Secrets it renders.
func renderUpgrade(t *testing.T, ch *chart.Chart, secrets ...*corev1.Secret) map[string]*corev1.Secret {
	t.Helper()
	out, _ := renderUpgradeNotes(t, ch, secrets...)
	return out
}

// renderUpgradeNotes is renderUpgrade that also returns NOTES.txt.
func renderUpgradeNotes(t *testing.T, ch *chart.Chart, secrets ...*corev1.Secret) (map[string]*corev1.Secret, string) {
	t.Helper()
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kubeVersion()
	vals, err := chartutil.ToRenderValues(ch, map[string]interface{}{},
		chartutil.ReleaseOptions{Name: DefaultRelease, Namespace: DefaultNamespace, Revision: 2, IsUpgrade: true}, caps)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, s := range secrets {
		objs = append(objs, s)
	}
	files, err := engine.RenderWithClientProvider(ch, vals, cluster{dynamicfake.NewSimpleDynamicClient(scheme, objs...)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	notes := ""
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			notes = files[name]
		} else {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var all bytes.Buffer
	for _, name := range names {
		all.WriteString("---\n# Source: " + name + "\n" + files[name] + "\n")
	}
	rendered, err := Decode(all.String(), "helm upgrade")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Secret{}
	for _, o := range rendered {
		if s, ok := o.Versioned.(*corev1.Secret); ok {
			out[s.Name] = s
		}
	}
	return out, notes
}

// On `helm upgrade` the chart keeps the extender's TLS Secrets it finds
// (lookup), so kube-scheduler's copy of the client certificate stays valid;
// with one of them gone it issues both anew, from one new CA; a serving
// Secret the release does not own is left alone.
func TestUpgradeKeepsTheExtenderCertificates(t *testing.T) {
	chartDir, _, _ := dirs(t)
	ch, err := Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	const serving, client = "gpulet-extender-tls", "gpulet-extender-scheduler-client"
	first := renderUpgrade(t, ch)
	if first[serving] == nil || first[client] == nil {
		t.Fatalf("Secrets %v rendered, want %s and %s", first, serving, client)
	}
	// As Helm leaves them in the cluster: owned by the release.
	for _, s := range first {
		s.Annotations = map[string]string{"meta.helm.sh/release-name": DefaultRelease}
	}
	again := renderUpgrade(t, ch, first[serving], first[client])
	for _, name := range []string{serving, client} {
		for k, v := range first[name].Data {
			if !bytes.Equal(again[name].Data[k], v) {
				t.Errorf("Secret %s: %s changed on upgrade", name, k)
			}
		}
	}
	renewed := renderUpgrade(t, ch, first[serving])
	if bytes.Equal(renewed[serving].Data["ca.crt"], first[serving].Data["ca.crt"]) ||
		!bytes.Equal(renewed[serving].Data["ca.crt"], renewed[client].Data["ca.crt"]) {
		t.Errorf("with the client Secret gone: want both Secrets issued anew from one new CA")
	}
	r := &Rendered{Secrets: renewed}
	if err := expectGeneratedTLS(r, "gpulet-extender", DefaultNamespace); err != nil {
		t.Error(err)
	}
	// A <name>-extender-tls made by hand, not the release's: used as it
	// is, nothing generated (helm would refuse to take it over).
	own := first[serving].DeepCopy()
	own.Annotations = nil
	got, notes := renderUpgradeNotes(t, ch, own)
	if len(got) != 0 {
		t.Errorf("with a Secret %s the release does not own: rendered %d Secrets, want none", serving, len(got))
	}
	// Nor does NOTES.txt send the operator to a client Secret that was
	// not made.
	if strings.Contains(notes, client) || !strings.Contains(notes, "your Secret "+serving) {
		t.Errorf("with a Secret %s the release does not own, NOTES.txt says:\n%s", serving, notes)
	}
}
