package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Helm chart (deploy/chart) is installed as `helm install` installs it,
// by gpulet-helm (Helm's own Go packages; test/manifests), in place of
// deploy/'s objects. Its values make the substitutions the fixture makes
// in deploy/ (see deploy.go): the image, the driver root, the simulator's
// machine, the API server's address in place of the kubernetes Service's
// (no kube-proxy here). The simulator's control socket is not mounted:
// nothing injects faults into gpulet while the chart's DaemonSet runs it.

// HelmRelease is the release name: the chart then names its objects as
// deploy/ does.
const HelmRelease = "gpulet"

// HelmValues is the values file the fixture installs the chart with:
// the fixture's image, driver root, simulator machine and API server
// address, then extra.
func (n *Node) HelmValues(extra string) string {
	colon := strings.LastIndex(GpuletImage, ":")
	return fmt.Sprintf("image:\n  repository: %s\n  tag: %q\nnvidiaDriverRoot: %s\nenv:\n- name: GPULET_SIM_MACHINE\n  value: %q\n"+
		"- name: KUBERNETES_SERVICE_HOST\n  value: %q\n- name: KUBERNETES_SERVICE_PORT\n  value: \"%d\"\n",
		GpuletImage[:colon], GpuletImage[colon+1:], n.Cfg.Paths.GPURoot(), n.Cfg.Machine, NodeIP, apiServerPort) + extra
}

// helm runs `gpulet-helm <command> --kubeconfig ... -n kube-system <args>`
// with its discovery cache and home in the state directory.
func (n *Node) helm(ctx context.Context, command string, args ...string) (string, error) {
	home := filepath.Join(n.Cfg.Paths.State, "helm")
	if err := os.MkdirAll(home, 0755); err != nil {
		return "", err
	}
	full := append([]string{command, "--kubeconfig", n.Kubeconfig, "-n", gpuletNamespace,
		"--cache-dir", filepath.Join(home, "cache")}, args...)
	cmd := exec.CommandContext(ctx, n.Cfg.Helm, full...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("gpulet-helm %s: %v: %s", command, err, out)
	}
	return string(out), nil
}

// HelmInstall installs the chart as HelmRelease in kube-system with
// values (a values file's text).
func (n *Node) HelmInstall(ctx context.Context, values string) error {
	file := filepath.Join(n.Cfg.Paths.State, "helm", "values.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0755); err != nil {
		return err
	}
	if err := os.WriteFile(file, []byte(values), 0644); err != nil {
		return err
	}
	_, err := n.helm(ctx, "install", "-f", file, HelmRelease, filepath.Join(n.Cfg.SourceDir, "deploy/chart"))
	return err
}

// HelmUninstall is `helm uninstall --wait` of HelmRelease.
func (n *Node) HelmUninstall(ctx context.Context) error {
	_, err := n.helm(ctx, "uninstall", HelmRelease)
	return err
}

// HelmReleases counts the Secrets in which Helm keeps HelmRelease's history.
func (n *Node) HelmReleases(ctx context.Context) (int, error) {
	s, err := n.Client.CoreV1().Secrets(gpuletNamespace).List(ctx,
		metav1.ListOptions{LabelSelector: "owner=helm,name=" + HelmRelease})
	if err != nil {
		return 0, err
	}
	return len(s.Items), nil
}

// nodeLabelsRBAC names the ClusterRole and ClusterRoleBinding for node
// labels, in deploy/ and in the chart's defaults alike.
const (
	nodeLabelsRBAC   = "gpulet-node-labels"
	nodeFeaturesRBAC = "gpulet-node-features"
)

// DeleteGpulet deletes deploy/'s objects (DaemonSet, ServiceAccount,
// ConfigMap, the node-label ClusterRole and ClusterRoleBinding, the
// NodeFeature Role and RoleBinding), as
// `kubectl delete -f deploy/...` does, and waits until they and gpulet's
// pods are gone.
func (n *Node) DeleteGpulet(ctx context.Context) error {
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	for _, del := range []func() error{
		func() error { return n.Client.AppsV1().DaemonSets(gpuletNamespace).Delete(ctx, "gpulet", opts) },
		func() error { return n.Client.CoreV1().ServiceAccounts(gpuletNamespace).Delete(ctx, "gpulet", opts) },
		func() error { return n.Client.CoreV1().ConfigMaps(gpuletNamespace).Delete(ctx, "gpulet-config", opts) },
		func() error { return n.Client.RbacV1().ClusterRoleBindings().Delete(ctx, nodeLabelsRBAC, opts) },
		func() error { return n.Client.RbacV1().ClusterRoles().Delete(ctx, nodeLabelsRBAC, opts) },
		func() error {
			return n.Client.RbacV1().RoleBindings(gpuletNamespace).Delete(ctx, nodeFeaturesRBAC, opts)
		},
		func() error { return n.Client.RbacV1().Roles(gpuletNamespace).Delete(ctx, nodeFeaturesRBAC, opts) },
	} {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return n.WaitGpuletGone(ctx)
}

// WaitGpuletGone waits until the gpulet DaemonSet, ServiceAccount and
// ConfigMap do not exist and no gpulet pod is left, terminating or not.
func (n *Node) WaitGpuletGone(ctx context.Context) error {
	return n.waitFor(ctx, "gpulet's DaemonSet, ServiceAccount, ConfigMap, node-label RBAC and pods to be gone", 120*time.Second,
		func(ctx context.Context) (bool, error) {
			gets := []func() error{
				func() error {
					_, err := n.Client.AppsV1().DaemonSets(gpuletNamespace).Get(ctx, "gpulet", metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := n.Client.CoreV1().ServiceAccounts(gpuletNamespace).Get(ctx, "gpulet", metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := n.Client.CoreV1().ConfigMaps(gpuletNamespace).Get(ctx, "gpulet-config", metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := n.Client.RbacV1().ClusterRoleBindings().Get(ctx, nodeLabelsRBAC, metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := n.Client.RbacV1().ClusterRoles().Get(ctx, nodeLabelsRBAC, metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := n.Client.RbacV1().RoleBindings(gpuletNamespace).Get(ctx, nodeFeaturesRBAC, metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := n.Client.RbacV1().Roles(gpuletNamespace).Get(ctx, nodeFeaturesRBAC, metav1.GetOptions{})
					return err
				},
			}
			for _, get := range gets {
				if err := get(); !apierrors.IsNotFound(err) {
					return false, nil
				}
			}
			pods, err := n.Client.CoreV1().Pods(gpuletNamespace).List(ctx,
				metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=gpulet"})
			return err == nil && len(pods.Items) == 0, nil
		})
}
