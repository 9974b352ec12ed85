package node

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// In DRA mode (Config.DRA) the node runs `gpulet dra` instead of the device
// plugin, deployed from deploy/dra/ as docs/dra.md says: the node is
// labelled gpulet.io/dra=true and rbac.yaml, slices-policy.yaml,
// deviceclasses.yaml and daemonset.yaml are applied through the API server.
// The DaemonSet gets the substitutions of deploy/daemonset.yaml's (image,
// driver root, simulator, API server address); as `gpulet dra` reads the
// driver's files at the host's path, the driver root is mounted at that
// same path, and gpulet dra is told to read the node's /proc/driver files
// there (--proc-root) rather than in the kernel's /proc, which has no
// NVIDIA driver here.

// DRADriver is gpulet's DRA driver name.
const DRADriver = "gpu.nvidia.com"

// DRAFeatureGates are the gates docs/dra.md lists, turned on explicitly on
// every component (all on by default in 1.36).
const DRAFeatureGates = "DRAPartitionableDevices=true,DRADeviceTaints=true," +
	"DRAExtendedResource=true,DRAConsumableCapacity=true"

var draManifests = []string{"rbac.yaml", "slices-policy.yaml", "deviceclasses.yaml", "daemonset.yaml"}

func (n *Node) substituteDra(ds *appsv1.DaemonSet) {
	root := n.Cfg.Paths.GPURoot()
	spec := &ds.Spec.Template.Spec
	c := &spec.Containers[0]
	n.substituteContainer(c)
	// The simulated node's /proc/driver files (MIG capability minors) are
	// in its root, not in the kernel's /proc.
	c.Args = append(c.Args, "--proc-root", root)
	dir := corev1.HostPathDirectory
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	spec.Volumes = append(spec.Volumes,
		corev1.Volume{Name: "driver-root", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: root, Type: &dir}}},
		corev1.Volume{Name: "nvml-sim", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: SimSocketDir, Type: &dirOrCreate}}})
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: "driver-root", MountPath: root, ReadOnly: true},
		corev1.VolumeMount{Name: "nvml-sim", MountPath: SimSocketDir})
}

// draObjects returns deploy/dra's objects, the DaemonSet substituted.
func (n *Node) draObjects() ([]runtime.Object, error) {
	var all []runtime.Object
	for _, f := range draManifests {
		objs, err := readObjects(filepath.Join(n.Cfg.SourceDir, "deploy/dra", f))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if ds, ok := o.(*appsv1.DaemonSet); ok {
				n.substituteDra(ds)
			}
		}
		all = append(all, objs...)
	}
	return all, nil
}

func (n *Node) create(ctx context.Context, o runtime.Object) error {
	var err error
	c := n.Client
	switch x := o.(type) {
	case *corev1.ServiceAccount:
		_, err = c.CoreV1().ServiceAccounts(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
	case *rbacv1.ClusterRole:
		_, err = c.RbacV1().ClusterRoles().Create(ctx, x, metav1.CreateOptions{})
	case *rbacv1.ClusterRoleBinding:
		_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, x, metav1.CreateOptions{})
	case *admissionv1.ValidatingAdmissionPolicy:
		_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, x, metav1.CreateOptions{})
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, x, metav1.CreateOptions{})
	case *resourcev1.DeviceClass:
		_, err = c.ResourceV1().DeviceClasses().Create(ctx, x, metav1.CreateOptions{})
	case *appsv1.DaemonSet:
		_, err = c.AppsV1().DaemonSets(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
	default:
		err = fmt.Errorf("deploy/dra: unexpected %T", o)
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// DeployGpuletDra labels the node for DRA, applies deploy/dra/ and waits
// until gpulet dra's pod runs and the node's ResourceSlices hold every GPU
// and MIG device of the machine, in the API server and in kube-scheduler's
// copy (WaitSchedulerSlices): a claim a scenario expects to wait then waits
// for its own reason, not for slices the scheduler has yet to see.
func (n *Node) DeployGpuletDra(ctx context.Context) error {
	patch := []byte(`{"metadata":{"labels":{"gpulet.io/dra":"true"}}}`)
	if _, err := n.Client.CoreV1().Nodes().Patch(ctx, NodeName, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}); err != nil {
		return err
	}
	objs, err := n.draObjects()
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := n.create(ctx, o); err != nil {
			return err
		}
	}
	if err := n.WaitGpuletRunning(ctx, ""); err != nil {
		return err
	}
	want := n.Machine.DRADeviceCount()
	err = n.waitFor(ctx, fmt.Sprintf("%d devices in the node's ResourceSlices", want), 120*time.Second,
		func(ctx context.Context) (bool, error) {
			if pod, err := n.GpuletPod(ctx); err == nil && pod != nil {
				for _, cs := range pod.Status.ContainerStatuses {
					if cs.RestartCount > 0 {
						return false, fmt.Errorf("gpulet dra restarted:\n%s", n.Kubectl("-n", gpuletNamespace,
							"logs", pod.Name, "--previous", "--tail=30"))
					}
				}
			}
			got, err := n.SliceDevices(ctx)
			return err == nil && len(got) == want, nil
		})
	if err != nil {
		return err
	}
	return n.WaitSchedulerSlices(ctx)
}

// SliceDevices returns the devices of the node's pool at its highest
// generation, by name.
func (n *Node) SliceDevices(ctx context.Context) (map[string]resourcev1.Device, error) {
	list, err := n.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: "spec.nodeName=" + NodeName + ",spec.driver=" + DRADriver})
	if err != nil {
		return nil, err
	}
	var gen int64
	for _, s := range list.Items {
		gen = max(gen, s.Spec.Pool.Generation)
	}
	out := map[string]resourcev1.Device{}
	for _, s := range list.Items {
		if s.Spec.Pool.Generation != gen {
			continue
		}
		for _, d := range s.Spec.Devices {
			out[d.Name] = d
		}
	}
	return out, nil
}
