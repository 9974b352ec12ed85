package node

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// gpulet is deployed from deploy/ as users deploy it: the ServiceAccount,
// ClusterRole and binding (node labels), DaemonSet and ConfigMap of
// deploy/daemonset.yaml and
// deploy/configmap-example.yaml, applied through the API server. The
// fixture substitutes only
//   - the image: the one built from this checkout (GpuletImage);
//   - the driver root: NVIDIA_DRIVER_ROOT and the driver-root hostPath name
//     the rendered GPU node's root instead of "/";
//   - the simulator's settings: GPULET_SIM_MACHINE and GPULET_SIM_SOCKET in
//     the environment, and a hostPath volume for the simulator's control
//     socket (so the fixture can inject faults into the NVML gpulet loads);
//   - KUBERNETES_SERVICE_HOST/PORT: the node has no kube-proxy, so the
//     in-cluster address of the API server is given as its own;
//   - the config file's text, where a scenario configures gpulet;
//   - a hostPath volume for the MPS root (Paths.MpsRoot), at the host's
//     path, for scenarios that share GPUs with MPS.

// Configs a scenario can put into the ConfigMap's config.yaml.
const (
	// ExampleConfig is deploy/configmap-example.yaml's config as shipped.
	ExampleConfig = ""
	// NoSharingConfig is the example with its `sharing:` section deleted,
	// the file's own "No sharing" alternative.
	NoSharingConfig = "no-sharing"
)

const gpuletNamespace = "kube-system"

func readObjects(path string) ([]runtime.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

func stripComments(doc []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(doc), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") && t != "---" {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, "\n"))
}

// withoutSharing deletes the `sharing:` section of a config file.
func withoutSharing(config string) string {
	var out []string
	skipping := false
	for _, l := range strings.Split(config, "\n") {
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if strings.TrimSpace(l) == "sharing:" && indent == 0 {
			skipping = true
			continue
		}
		if skipping && strings.TrimSpace(l) != "" && indent == 0 {
			skipping = false
		}
		if !skipping {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// ConfigMap returns deploy/configmap-example.yaml's ConfigMap with its
// config.yaml replaced as `config` says: ExampleConfig, NoSharingConfig, or
// the text of a config file.
func (n *Node) ConfigMap(config string) (*corev1.ConfigMap, error) {
	objs, err := readObjects(filepath.Join(n.Cfg.SourceDir, "deploy/configmap-example.yaml"))
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		switch config {
		case ExampleConfig:
		case NoSharingConfig:
			cm.Data["config.yaml"] = withoutSharing(cm.Data["config.yaml"])
		default:
			cm.Data["config.yaml"] = config
		}
		return cm, nil
	}
	return nil, fmt.Errorf("no ConfigMap in deploy/configmap-example.yaml")
}

// gpuletObjects returns deploy/daemonset.yaml's objects with the fixture's
// substitutions.
func (n *Node) gpuletObjects() ([]runtime.Object, error) {
	objs, err := readObjects(filepath.Join(n.Cfg.SourceDir, "deploy/daemonset.yaml"))
	if err != nil {
		return nil, err
	}
	root := n.Cfg.Paths.GPURoot()
	found := false
	for _, o := range objs {
		ds, ok := o.(*appsv1.DaemonSet)
		if !ok {
			continue
		}
		found = true
		spec := &ds.Spec.Template.Spec
		c := &spec.Containers[0]
		n.substituteContainer(c)
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == "driver-root" && spec.Volumes[i].HostPath != nil {
				spec.Volumes[i].HostPath.Path = root
			}
		}
		dirOrCreate := corev1.HostPathDirectoryOrCreate
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "nvml-sim",
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: SimSocketDir, Type: &dirOrCreate}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "nvml-sim", MountPath: SimSocketDir})
		mps := n.Cfg.Paths.MpsRoot()
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "mps-root",
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: mps, Type: &dirOrCreate}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "mps-root", MountPath: mps})
	}
	if !found {
		return nil, fmt.Errorf("no DaemonSet in deploy/daemonset.yaml")
	}
	return objs, nil
}

// DeployGpulet creates the ConfigMap (with `config`) and deploy/'s objects,
// then waits until gpulet's pod runs and the node advertises the GPUs.
func (n *Node) DeployGpulet(ctx context.Context, config string) error {
	cm, err := n.ConfigMap(config)
	if err != nil {
		return err
	}
	if err := n.runtimeSettingFor(cm.Data["config.yaml"]); err != nil {
		return err
	}
	if _, err := n.Client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	objs, err := n.gpuletObjects()
	if err != nil {
		return err
	}
	for _, o := range objs {
		switch x := o.(type) {
		case *corev1.ServiceAccount:
			_, err = n.Client.CoreV1().ServiceAccounts(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = n.Client.RbacV1().ClusterRoles().Create(ctx, x, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = n.Client.RbacV1().ClusterRoleBindings().Create(ctx, x, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = n.Client.RbacV1().Roles(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = n.Client.RbacV1().RoleBindings(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
		case *appsv1.DaemonSet:
			_, err = n.Client.AppsV1().DaemonSets(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("deploy/daemonset.yaml: unexpected %T", o)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	if err := n.WaitGpuletRunning(ctx, ""); err != nil {
		return err
	}
	want := len(n.Machine.GPUs)
	if config == ExampleConfig {
		want *= 4
	}
	return n.WaitAllocatable(ctx, "nvidia.com/gpu", want)
}

// GpuletPod returns gpulet's running pod, if any.
func (n *Node) GpuletPod(ctx context.Context) (*corev1.Pod, error) {
	pods, err := n.Client.CoreV1().Pods(gpuletNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=gpulet"})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			return &pods.Items[i], nil
		}
	}
	return nil, nil
}

// WaitGpuletRunning waits until a gpulet pod other than `not` (a pod UID,
// or "") runs and is ready.
func (n *Node) WaitGpuletRunning(ctx context.Context, not string) error {
	return n.waitFor(ctx, "gpulet's pod to run", 120*time.Second, func(ctx context.Context) (bool, error) {
		pod, err := n.GpuletPod(ctx)
		if err != nil || pod == nil || string(pod.UID) == not {
			return false, nil
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && (w.Reason == "CrashLoopBackOff" || w.Reason == "CreateContainerError" || w.Reason == "ErrImageNeverPull") {
				return false, fmt.Errorf("gpulet's pod: %s: %s\n%s", w.Reason, w.Message, n.Kubectl("-n", gpuletNamespace, "logs", pod.Name, "--tail=30"))
			}
		}
		return pod.Status.Phase == corev1.PodRunning, nil
	})
}

// Allocatable returns the node's allocatable count of a resource.
func (n *Node) Allocatable(ctx context.Context, resource string) (int64, error) {
	node, err := n.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	q, ok := node.Status.Allocatable[corev1.ResourceName(resource)]
	if !ok {
		return 0, nil
	}
	return q.Value(), nil
}

// WaitAllocatable waits until the node's allocatable resource equals want.
func (n *Node) WaitAllocatable(ctx context.Context, resource string, want int) error {
	return n.waitFor(ctx, fmt.Sprintf("allocatable %s = %d", resource, want), 120*time.Second, func(ctx context.Context) (bool, error) {
		got, err := n.Allocatable(ctx, resource)
		return err == nil && got == int64(want), nil
	})
}

// substituteContainer points a shipped DaemonSet's gpulet container at this
// node: the test image, the simulated driver root, the simulator, and the
// API server.
func (n *Node) substituteContainer(c *corev1.Container) {
	c.Image = GpuletImage
	for i := range c.Env {
		if c.Env[i].Name == "NVIDIA_DRIVER_ROOT" {
			c.Env[i].Value = n.Cfg.Paths.GPURoot()
		}
	}
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "GPULET_SIM_MACHINE", Value: n.Cfg.Machine},
		corev1.EnvVar{Name: "GPULET_SIM_SOCKET", Value: SimSocket},
		// No kube-proxy here: the kubernetes Service's address is the
		// API server's own (what kube-proxy would translate it to).
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: NodeIP},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: fmt.Sprint(apiServerPort)})
}
