package node

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GpuletPodToken returns a new token of gpulet's service account bound to
// its running pod, as the kubelet projects into that pod: the API server
// then knows the node the pod runs on (the user's extra
// authentication.kubernetes.io/node-name), which deploy/node-policy.yaml
// checks. It is the token an attacker who owns this node takes from it.
func (n *Node) GpuletPodToken(ctx context.Context) (string, error) {
	pod, err := n.GpuletPod(ctx)
	if err != nil {
		return "", err
	}
	if pod == nil {
		return "", fmt.Errorf("no gpulet pod runs in %s", gpuletNamespace)
	}
	seconds := int64(3600)
	tr, err := n.Client.CoreV1().ServiceAccounts(gpuletNamespace).CreateToken(ctx, pod.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &seconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token of %s/%s bound to pod %s: %w", gpuletNamespace, pod.Spec.ServiceAccountName, pod.Name, err)
	}
	return tr.Status.Token, nil
}
