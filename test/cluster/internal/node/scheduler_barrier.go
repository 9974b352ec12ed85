package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Waiting until the API server's ResourceSlices say something tells
// nothing about kube-scheduler's own copy of them, which its informer
// fills from a watch some time later. WaitSchedulerSlices closes that gap
// with a barrier instead of a delay: the informer receives the slice
// events of its one watch in resourceVersion order, so once the scheduler
// has allocated a device that only a slice created now offers, it has
// also received every slice change made before that slice.
//
// The barrier's objects belong to a driver nobody else uses: a DeviceClass,
// a ResourceSlice on this node with one device carrying a fresh id, a
// ResourceClaim only that device satisfies, and a pod using the claim. The
// kubelet has no plugin of that driver and so cannot prepare the claim;
// it refuses before recording the claim as its own, which lets the pod,
// left ContainerCreating, be deleted without any unprepare call.

// BarrierDriver is the DRA driver name of the barrier's slice and class.
const BarrierDriver = "barrier.gpulet.test"

const barrierNamespace = "default"

// WaitSchedulerSlices returns once kube-scheduler has received every
// ResourceSlice change the API server held when it was called, and the
// barrier's objects are gone again.
func (n *Node) WaitSchedulerSlices(ctx context.Context) (err error) {
	name := fmt.Sprintf("gpulet-barrier-%d", time.Now().UnixNano())
	defer func() { err = errors.Join(err, n.removeBarrier(ctx, name)) }()
	if err := n.createBarrier(ctx, name); err != nil {
		return fmt.Errorf("scheduler barrier %s: %w", name, err)
	}
	claims := n.Client.ResourceV1().ResourceClaims(barrierNamespace)
	return n.waitFor(ctx, "kube-scheduler to allocate barrier claim "+name, 60*time.Second,
		func(ctx context.Context) (bool, error) {
			c, err := claims.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			a := c.Status.Allocation
			if a == nil {
				return false, nil
			}
			for _, r := range a.Devices.Results {
				if r.Driver != BarrierDriver {
					return false, fmt.Errorf("barrier claim %s got %s/%s/%s", name, r.Driver, r.Pool, r.Device)
				}
			}
			return true, nil
		})
}

func (n *Node) createBarrier(ctx context.Context, name string) error {
	c := n.Client.ResourceV1()
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.driver == %q", BarrierDriver)}}}}}
	if _, err := c.DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return err
	}
	node := NodeName
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   BarrierDriver,
			Pool:     resourcev1.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
			NodeName: &node,
			Devices: []resourcev1.Device{{Name: "barrier", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"id": {StringValue: &name}}}},
		}}
	if _, err := c.ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return err
	}
	req := resourcev1.ExactDeviceRequest{DeviceClassName: name, AllocationMode: resourcev1.DeviceAllocationModeExactCount,
		Count: 1, Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.attributes[%q].id == %q", BarrierDriver, name)}}}}
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: barrierNamespace},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "barrier", Exactly: &req}}}}}
	if _, err := c.ResourceClaims(barrierNamespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return err
	}
	grace := int64(1)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: barrierNamespace},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: WorkloadImage, ImagePullPolicy: corev1.PullNever,
				Command:   []string{"/bin/sh", "-c", "true"},
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "barrier"}}}}},
			ResourceClaims:                []corev1.PodResourceClaim{{Name: "barrier", ResourceClaimName: &name}},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
		}}
	_, err := n.Client.CoreV1().Pods(barrierNamespace).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// removeBarrier deletes what createBarrier made (some of it, when it
// failed half-way), the pod and the claim waited for until gone.
func (n *Node) removeBarrier(ctx context.Context, name string) error {
	gone := func(err error) error {
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	pods := n.Client.CoreV1().Pods(barrierNamespace)
	claims := n.Client.ResourceV1().ResourceClaims(barrierNamespace)
	if err := gone(pods.Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
		return fmt.Errorf("delete barrier pod %s: %w", name, err)
	}
	if err := n.waitFor(ctx, "barrier pod "+name+" to be gone", 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		return err
	}
	if err := gone(claims.Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
		return fmt.Errorf("delete barrier claim %s: %w", name, err)
	}
	if err := n.waitFor(ctx, "barrier claim "+name+" to be gone", 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := claims.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		return err
	}
	return errors.Join(
		gone(n.Client.ResourceV1().ResourceSlices().Delete(ctx, name, metav1.DeleteOptions{})),
		gone(n.Client.ResourceV1().DeviceClasses().Delete(ctx, name, metav1.DeleteOptions{})))
}
