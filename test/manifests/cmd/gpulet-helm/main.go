// gpulet-helm runs gpulet's Helm chart through Helm's own Go packages
// (helm.sh/helm/v3), so that the tests need no helm binary:
//
//	gpulet-helm check [--docs DIR] DEPLOY_DIR
//	    helm lint --strict and helm template over every case of chart.Cases,
//	    each rendered object checked as the API server would, the defaults
//	    compared with DEPLOY_DIR's objects (package chart)
//	gpulet-helm template [-n NS] [-f VALUES]... NAME CHART
//	gpulet-helm install --kubeconfig FILE [-n NS] [-f VALUES]... [--cache-dir DIR] NAME CHART
//	gpulet-helm uninstall --kubeconfig FILE [-n NS] [--cache-dir DIR] NAME
//
// install and uninstall are `helm install` and `helm uninstall --wait`
// against a real API server, releases kept as Secrets as helm keeps them.
// Exit status 0 on success, 1 on failure, 2 on a usage error.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"gpulet.dev/test/manifests/chart"
)

type valueFiles []string

func (v *valueFiles) String() string     { return strings.Join(*v, ",") }
func (v *valueFiles) Set(s string) error { *v = append(*v, s); return nil }

func usage() {
	fmt.Fprintln(os.Stderr, `usage: gpulet-helm check [--docs DIR] DEPLOY_DIR
       gpulet-helm template [-n NS] [-f VALUES]... NAME CHART
       gpulet-helm install --kubeconfig FILE [-n NS] [-f VALUES]... [--cache-dir DIR] NAME CHART
       gpulet-helm uninstall --kubeconfig FILE [-n NS] [--cache-dir DIR] NAME`)
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "gpulet-helm: %v\n", err)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	docs := fs.String("docs", "docs", "gpulet's Markdown docs (helm.md's values table, the documented variables)")
	namespace := fs.String("n", chart.DefaultNamespace, "the release's namespace")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	cacheDir := fs.String("cache-dir", "", "discovery cache directory (default: kubectl's, ~/.kube/cache)")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long uninstall waits for the objects to be gone")
	var files valueFiles
	fs.Var(&files, "f", "a values file (repeatable, later ones win)")
	fs.Usage = usage
	_ = fs.Parse(os.Args[2:])
	args := fs.Args()

	switch os.Args[1] {
	case "check":
		if len(args) != 1 {
			usage()
		}
		names, err := chart.CheckAll(filepath.Join(args[0], "chart"), *docs, args[0])
		for _, n := range names {
			fmt.Printf("ok  values %q: helm lint --strict, helm template, API validation\n", n)
		}
		if err != nil {
			fail(err)
		}
		fmt.Println("ok  defaults render deploy/'s objects (daemonset.yaml, node-policy.yaml, extender/) and the extender's TLS Secrets")
		fmt.Println("ok  every value of values.yaml is in docs/helm.md and set by a case")
	case "template":
		if len(args) != 2 {
			usage()
		}
		ch, vals := load(args[1], files)
		text, err := chart.Template(ch, args[0], *namespace, vals)
		if err != nil {
			fail(err)
		}
		fmt.Print(text)
	case "install":
		if len(args) != 2 || *kubeconfig == "" {
			usage()
		}
		ch, vals := load(args[1], files)
		cfg := configuration(*kubeconfig, *namespace, *cacheDir)
		inst := action.NewInstall(cfg)
		inst.ReleaseName = args[0]
		inst.Namespace = *namespace
		rel, err := inst.Run(ch, vals)
		if err != nil {
			fail(fmt.Errorf("helm install %s: %w", args[0], err))
		}
		fmt.Printf("installed %s in %s: revision %d, %s\n", rel.Name, rel.Namespace, rel.Version, rel.Info.Status)
	case "uninstall":
		if len(args) != 1 || *kubeconfig == "" {
			usage()
		}
		cfg := configuration(*kubeconfig, *namespace, *cacheDir)
		u := action.NewUninstall(cfg)
		u.Wait = true
		u.Timeout = *timeout
		res, err := u.Run(args[0])
		if err != nil {
			fail(fmt.Errorf("helm uninstall %s: %w", args[0], err))
		}
		fmt.Printf("uninstalled %s\n", res.Release.Name)
	default:
		usage()
	}
}

// load reads a chart and merges its values files as `helm -f` does: a
// later file's value wins, maps are merged key by key, a null stays (it
// removes the chart's default when the release is rendered).
func load(dir string, files valueFiles) (*helmchart.Chart, map[string]interface{}) {
	ch, err := chart.Load(dir)
	if err != nil {
		fail(err)
	}
	vals := map[string]interface{}{}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			fail(fmt.Errorf("-f %s: %w", f, err))
		}
		vals = merge(vals, v)
	}
	return ch, vals
}

func merge(base, over map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if m, ok := v.(map[string]interface{}); ok {
			if b, ok := out[k].(map[string]interface{}); ok {
				out[k] = merge(b, m)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func configuration(kubeconfig, namespace, cacheDir string) *action.Configuration {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &namespace
	if cacheDir != "" {
		flags.CacheDir = &cacheDir
	}
	cfg := new(action.Configuration)
	logf := func(format string, v ...interface{}) {}
	if err := cfg.Init(flags, namespace, "secret", logf); err != nil {
		fail(err)
	}
	return cfg
}
