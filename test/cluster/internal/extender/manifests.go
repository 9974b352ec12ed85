//go:build extender

package extender

import (
	"context"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedulervalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
)

// applyManifests creates every object of a deploy/ manifest through the
// API server (decoded strictly, validated by the server), so the RBAC the
// extender then runs under is exactly the one shipped.
func applyManifests(t *testing.T, c kubernetes.Interface, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decode := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer().Decode
	ctx := context.Background()
	create := metav1.CreateOptions{FieldValidation: "Strict"}
	for i, doc := range strings.Split(string(data), "\n---\n") {
		if onlyComments(doc) {
			continue
		}
		obj, _, err := decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s document %d: %v", path, i+1, err)
		}
		switch o := obj.(type) {
		case *v1.ServiceAccount:
			_, err = c.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, create)
		case *rbacv1.ClusterRole:
			_, err = c.RbacV1().ClusterRoles().Create(ctx, o, create)
		case *rbacv1.ClusterRoleBinding:
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, o, create)
		case *appsv1.Deployment:
			_, err = c.AppsV1().Deployments(o.Namespace).Create(ctx, o, create)
		case *v1.Service:
			_, err = c.CoreV1().Services(o.Namespace).Create(ctx, o, create)
		default:
			t.Fatalf("%s document %d: unexpected kind %T", path, i+1, obj)
		}
		if err != nil {
			t.Fatalf("%s document %d: %v", path, i+1, err)
		}
	}
}

func onlyComments(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		l := strings.TrimSpace(line)
		if l != "" && l != "---" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// serviceAccountToken is a bound token of the extender's service account.
func serviceAccountToken(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	seconds := int64(3600)
	tr, err := c.CoreV1().ServiceAccounts("kube-system").CreateToken(context.Background(),
		"gpulet-extender", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// schedulerExtender is the extenders: entry of the shipped scheduler
// configuration, decoded strictly and validated as kube-scheduler does.
func schedulerExtender(t *testing.T, path string) schedulerapi.Extender {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := schedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cfg, ok := obj.(*schedulerapi.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("%s: a %T, not a KubeSchedulerConfiguration", path, obj)
	}
	if err := schedulervalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(cfg.Extenders) != 1 {
		t.Fatalf("%s: %d extenders, want 1", path, len(cfg.Extenders))
	}
	return cfg.Extenders[0]
}
