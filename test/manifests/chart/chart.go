// Package chart checks gpulet's Helm chart (deploy/chart) with Helm's own
// Go packages, as `helm lint --strict` and `helm template` do (action.Lint;
// action.Install in client-only mode), and every object it renders with
// package manifests, as the API server would check it on create. Cases
// lists the values the chart is checked with: every value of values.yaml,
// each of its documented settings.
package chart

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"gpulet.dev/test/manifests"
)

// KubeVersion is the Kubernetes version charts are rendered for: the one
// the API validation in package manifests comes from.
const KubeVersion = "v1.36.3"

// Defaults of a Case.
const (
	DefaultRelease   = "gpulet"
	DefaultNamespace = "kube-system"
)

// Load reads the chart directory.
func Load(dir string) (*chart.Chart, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	return ch, nil
}

// Values parses a values file's text (as `helm -f` reads it).
func Values(text string) (map[string]interface{}, error) {
	v, err := chartutil.ReadValues([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	return v, nil
}

func kubeVersion() *chartutil.KubeVersion {
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		panic(err)
	}
	return kv
}

// Lint is `helm lint --strict --namespace namespace -f values dir`: an
// error for every message of warning severity or worse.
func Lint(dir, namespace string, values map[string]interface{}) error {
	l := action.NewLint()
	l.Strict = true
	l.Namespace = namespace
	l.KubeVersion = kubeVersion()
	res := l.Run([]string{dir}, values)
	if len(res.Errors) == 0 {
		return nil
	}
	var msgs []string
	for _, e := range res.Errors {
		msgs = append(msgs, e.Error())
	}
	return fmt.Errorf("helm lint: %s", strings.Join(msgs, "; "))
}

// Template is `helm template release dir --namespace namespace -f values`:
// the rendered manifest (NOTES.txt apart; hooks, which the chart has none
// of, refused).
func Template(ch *chart.Chart, release, namespace string, values map[string]interface{}) (string, error) {
	manifest, _, err := Render(ch, release, namespace, values)
	return manifest, err
}

// Render is Template, also returning NOTES.txt as `helm install` prints it.
func Render(ch *chart.Chart, release, namespace string, values map[string]interface{}) (manifest, notes string, err error) {
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...interface{}) {}})
	inst.ClientOnly = true
	inst.DryRun = true
	inst.Replace = true
	inst.ReleaseName = release
	inst.Namespace = namespace
	inst.KubeVersion = kubeVersion()
	rel, err := inst.Run(ch, values)
	if err != nil {
		return "", "", fmt.Errorf("helm template: %w", err)
	}
	if len(rel.Hooks) > 0 {
		return "", "", errors.New("helm template: the chart has hooks; nothing checks them")
	}
	return rel.Manifest, rel.Info.Notes, nil
}

// Decode checks every document of a rendered manifest with
// manifests.Decode; each is named "<source>: <template file>".
func Decode(manifest, source string) ([]manifests.Object, error) {
	docs, err := manifests.SplitDocuments([]byte(manifest))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var objs []manifests.Object
	for i, doc := range docs {
		if doc == nil {
			continue
		}
		name := fmt.Sprintf("%s#%d", source, i+1)
		for _, line := range strings.Split(string(doc), "\n") {
			if t, ok := strings.CutPrefix(line, "# Source: "); ok {
				name = source + ": " + t
				break
			}
		}
		obj, err := manifests.Decode(doc, name)
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s: the chart rendered no object", source)
	}
	return objs, nil
}

// Kinds lists the kinds of objs, sorted, for messages and tests.
func Kinds(objs []manifests.Object) []string {
	var k []string
	for _, o := range objs {
		k = append(k, o.GVK.Kind)
	}
	sort.Strings(k)
	return k
}
