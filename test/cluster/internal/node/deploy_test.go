package node

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

func sourceDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "../../../..")
}

func TestNoSharingConfigDropsOnlyTheSharingSection(t *testing.T) {
	n := &Node{Cfg: Config{SourceDir: sourceDir(t)}}
	example, err := n.ConfigMap(ExampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(example.Data["config.yaml"], "timeSlicing:") {
		t.Fatalf("the example config no longer time-slices; the fixture's expectations need updating")
	}
	cm, err := n.ConfigMap(NoSharingConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := cm.Data["config.yaml"]
	var parsed map[string]any
	if err := yaml.Unmarshal([]byte(text), &parsed); err != nil {
		t.Fatalf("config without sharing is not YAML: %v\n%s", err, text)
	}
	if _, ok := parsed["sharing"]; ok {
		t.Errorf("sharing still present:\n%s", text)
	}
	if parsed["version"] != "v1" || parsed["flags"] == nil {
		t.Errorf("lost more than the sharing section:\n%s", text)
	}
}

func TestDaemonSetSubstitutionsAreOnlyImageDriverRootAndSimulator(t *testing.T) {
	n := &Node{Cfg: Config{SourceDir: sourceDir(t), Machine: "dgx-h100", Paths: Paths{State: "/tmp/s"}}}
	objs, err := n.gpuletObjects()
	if err != nil {
		t.Fatal(err)
	}
	orig, err := readObjects(filepath.Join(sourceDir(t), "deploy/daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var got, want *appsv1.DaemonSet
	for _, o := range objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			got = ds
		}
	}
	for _, o := range orig {
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			want = ds
		}
	}
	c := got.Spec.Template.Spec.Containers[0]
	if c.Image != GpuletImage {
		t.Errorf("image %s", c.Image)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["NVIDIA_DRIVER_ROOT"] != "/tmp/s/gpu-root" || env["GPULET_SIM_SOCKET"] != SimSocket || env["GPULET_SIM_MACHINE"] != "dgx-h100" {
		t.Errorf("env %v", env)
	}
	if env["KUBERNETES_SERVICE_HOST"] != NodeIP || env["KUBERNETES_SERVICE_PORT"] != "6443" {
		t.Errorf("API server address: env %v", env)
	}
	if len(c.Env) != len(want.Spec.Template.Spec.Containers[0].Env)+4 {
		t.Errorf("env: %d entries, want the original's %d + 4", len(c.Env), len(want.Spec.Template.Spec.Containers[0].Env))
	}
	if len(got.Spec.Template.Spec.Volumes) != len(want.Spec.Template.Spec.Volumes)+2 {
		t.Errorf("volumes: want the original's + 2 (simulator socket, MPS root)")
	}
	// The MPS root at the host's path, as docs/sharing.md asks.
	mps := false
	for _, v := range got.Spec.Template.Spec.Volumes {
		mps = mps || (v.Name == "mps-root" && v.HostPath != nil && v.HostPath.Path == "/tmp/s/mps")
	}
	for _, m := range c.VolumeMounts {
		mps = mps && (m.Name != "mps-root" || m.MountPath == "/tmp/s/mps")
	}
	if !mps {
		t.Errorf("no mps-root hostPath volume mounted at /tmp/s/mps")
	}
	// Everything else as shipped.
	g, w := got.DeepCopy(), want.DeepCopy()
	g.Spec.Template.Spec.Containers[0] = w.Spec.Template.Spec.Containers[0]
	g.Spec.Template.Spec.Volumes = w.Spec.Template.Spec.Volumes
	gy, _ := yaml.Marshal(g)
	wy, _ := yaml.Marshal(w)
	if string(gy) != string(wy) {
		t.Errorf("the DaemonSet changed beyond the container and volumes:\n%s\nvs\n%s", gy, wy)
	}
}

func TestHelmValuesAreTheFixtureSubstitutions(t *testing.T) {
	n := &Node{Cfg: Config{Machine: "a100-mig", Paths: Paths{State: "/tmp/s"}}}
	var v struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
		NvidiaDriverRoot string `json:"nvidiaDriverRoot"`
		Env              []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"env"`
		Metrics struct {
			Enabled bool `json:"enabled"`
		} `json:"metrics"`
	}
	if err := yaml.UnmarshalStrict([]byte(n.HelmValues("metrics:\n  enabled: true\n")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Image.Repository+":"+v.Image.Tag != GpuletImage || v.NvidiaDriverRoot != "/tmp/s/gpu-root" || !v.Metrics.Enabled {
		t.Errorf("values %+v", v)
	}
	if len(v.Env) != 3 || v.Env[0].Name != "GPULET_SIM_MACHINE" || v.Env[0].Value != "a100-mig" ||
		v.Env[1].Name != "KUBERNETES_SERVICE_HOST" || v.Env[1].Value != NodeIP ||
		v.Env[2].Name != "KUBERNETES_SERVICE_PORT" || v.Env[2].Value != "6443" {
		t.Errorf("env %+v", v.Env)
	}
}

func TestEnvvarStrategyOpensTheRuntimeSetting(t *testing.T) {
	for _, c := range []struct {
		config string
		want   bool
	}{
		{"version: v1\n", true},
		{"version: v1\nflags:\n  plugin:\n    deviceListStrategy: envvar\n", true},
		{"version: v1\nflags:\n  plugin:\n    deviceListStrategy: volume-mounts\n", false},
		{"version: v1\nflags:\n  plugin:\n    deviceListStrategy: [cdi-annotations, cdi-cri]\n", false},
		{"version: v1\nflags:\n  plugin:\n    deviceListStrategy: [volume-mounts, envvar]\n", true},
	} {
		got, err := usesEnvvarStrategy(c.config)
		if err != nil || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.config, got, err, c.want)
		}
	}
	p := Paths{State: t.TempDir()}
	text := "runtime: runc\nacceptEnvvarUnprivileged: false\nlogFile: x\n"
	if err := os.WriteFile(p.RuntimeConfig(), []byte(text), 0644); err != nil {
		t.Fatal(err)
	}
	if err := p.setAcceptEnvvar(true); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p.RuntimeConfig())
	if want := strings.Replace(text, "false", "true", 1); string(got) != want {
		t.Errorf("runtime config %q, want %q", got, want)
	}
}
