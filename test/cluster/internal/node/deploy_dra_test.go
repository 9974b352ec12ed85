package node

import (
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// deploy/dra/'s DaemonSet gets only the fixture's substitutions; the other
// objects of deploy/dra/ are applied as shipped.
func TestDraDaemonSetSubstitutions(t *testing.T) {
	n := &Node{Cfg: Config{SourceDir: sourceDir(t), Machine: "a100-mig", Paths: Paths{State: "/tmp/s"}}}
	objs, err := n.draObjects()
	if err != nil {
		t.Fatal(err)
	}
	orig, err := readObjects(filepath.Join(sourceDir(t), "deploy/dra/daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var got, want *appsv1.DaemonSet
	classes := 0
	for _, o := range objs {
		switch x := o.(type) {
		case *appsv1.DaemonSet:
			got = x
		case *resourcev1.DeviceClass:
			classes++
		}
	}
	for _, o := range orig {
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			want = ds
		}
	}
	if got == nil || want == nil || classes != 2 {
		t.Fatalf("deploy/dra: DaemonSet %v, %d DeviceClasses", got != nil, classes)
	}
	c := got.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if c.Image != GpuletImage || env["NVIDIA_DRIVER_ROOT"] != "/tmp/s/gpu-root" || env["GPULET_SIM_MACHINE"] != "a100-mig" ||
		env["GPULET_SIM_SOCKET"] != SimSocket || env["KUBERNETES_SERVICE_HOST"] != NodeIP {
		t.Errorf("image %s, env %v", c.Image, env)
	}
	if len(c.Args) != 2 || c.Args[0] != "--proc-root" || c.Args[1] != "/tmp/s/gpu-root" {
		t.Errorf("args %v", c.Args)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["driver-root"] != "/tmp/s/gpu-root" || mounts["nvml-sim"] != SimSocketDir {
		t.Errorf("mounts %v", mounts)
	}
	g, w := got.DeepCopy(), want.DeepCopy()
	g.Spec.Template.Spec.Containers[0] = w.Spec.Template.Spec.Containers[0]
	g.Spec.Template.Spec.Volumes = w.Spec.Template.Spec.Volumes
	gy, _ := yaml.Marshal(g)
	wy, _ := yaml.Marshal(w)
	if string(gy) != string(wy) {
		t.Errorf("the DaemonSet changed beyond the container and volumes:\n%s\nvs\n%s", gy, wy)
	}
}
