package node

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// NodeMeta returns the node's labels and annotations as the API server has
// them.
func (n *Node) NodeMeta(ctx context.Context) (labels, annotations map[string]string, err error) {
	node, err := n.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	return node.Labels, node.Annotations, nil
}

// WaitNodeMeta waits until ok holds for the node's labels and annotations.
func (n *Node) WaitNodeMeta(ctx context.Context, what string, ok func(labels, annotations map[string]string) bool) error {
	return n.waitFor(ctx, what, 60*time.Second, func(ctx context.Context) (bool, error) {
		labels, annotations, err := n.NodeMeta(ctx)
		return err == nil && ok(labels, annotations), nil
	})
}

// SetNodeLabel merge-patches one label onto the node as an administrator
// does; value nil removes it.
func (n *Node) SetNodeLabel(ctx context.Context, key string, value *string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: value}}})
	if err != nil {
		return err
	}
	if _, err := n.Client.CoreV1().Nodes().Patch(ctx, NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling the node %s: %w", key, err)
	}
	return nil
}

// ApplyDeployFile creates the objects of deploy/<file> (admission
// policies, RBAC, and their bindings) and returns a function that deletes them.
func (n *Node) ApplyDeployFile(ctx context.Context, file string) (func(context.Context) error, error) {
	objs, err := readObjects(filepath.Join(n.Cfg.SourceDir, "deploy", file))
	if err != nil {
		return nil, err
	}
	api := n.Client.AdmissionregistrationV1()
	var undo []func(context.Context) error
	cleanup := func(ctx context.Context) error {
		var first error
		for i := len(undo) - 1; i >= 0; i-- {
			if err := undo[i](ctx); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for _, o := range objs {
		switch x := o.(type) {
		case *admissionv1.ValidatingAdmissionPolicy:
			if _, err := api.ValidatingAdmissionPolicies().Create(ctx, x, metav1.CreateOptions{}); err != nil {
				_ = cleanup(ctx)
				return nil, fmt.Errorf("deploy/%s: %w", file, err)
			}
			name := x.Name
			undo = append(undo, func(ctx context.Context) error {
				return api.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
			})
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, x, metav1.CreateOptions{}); err != nil {
				_ = cleanup(ctx)
				return nil, fmt.Errorf("deploy/%s: %w", file, err)
			}
			name := x.Name
			undo = append(undo, func(ctx context.Context) error {
				return api.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
			})
		case *rbacv1.ClusterRole:
			if _, err := n.Client.RbacV1().ClusterRoles().Create(ctx, x, metav1.CreateOptions{}); err != nil {
				_ = cleanup(ctx)
				return nil, fmt.Errorf("deploy/%s: %w", file, err)
			}
			name := x.Name
			undo = append(undo, func(ctx context.Context) error {
				return n.Client.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
			})
		case *rbacv1.ClusterRoleBinding:
			if _, err := n.Client.RbacV1().ClusterRoleBindings().Create(ctx, x, metav1.CreateOptions{}); err != nil {
				_ = cleanup(ctx)
				return nil, fmt.Errorf("deploy/%s: %w", file, err)
			}
			name := x.Name
			undo = append(undo, func(ctx context.Context) error {
				return n.Client.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
			})
		default:
			_ = cleanup(ctx)
			return nil, fmt.Errorf("deploy/%s: unexpected %T", file, o)
		}
	}
	return cleanup, nil
}

// ClientAs returns an API client that impersonates user with the given
// extra attributes (as a bound service-account token carries them).
func (n *Node) ClientAs(user string, extra map[string][]string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", n.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Extra: extra}
	return kubernetes.NewForConfig(cfg)
}
