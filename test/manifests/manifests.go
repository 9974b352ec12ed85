// Package manifests checks gpulet's Kubernetes manifests (deploy/*.yaml) the
// way a kube-apiserver would accept them on `kubectl apply`: every YAML
// document is decoded strictly (an unknown or duplicated field is an error,
// as with kubectl's default --validate=strict), defaulted, converted to the
// internal API types and validated by the API server's own validation for its
// kind (k8s.io/kubernetes/pkg/apis/{apps,core,rbac}/validation), called with the
// options and preparation the API server's registry strategy for that kind
// uses on create (k8s.io/kubernetes/pkg/registry/...; those packages are not
// imported because they pull in the etcd client). Warnings the API server
// would send back, and fields it would silently drop, are errors here.
//
// On top of what the API server checks, Set.Check verifies that the objects fit
// together (the DaemonSet's ConfigMap, key and service account exist, the
// config file named by CONFIG_FILE is one of the ConfigMap's keys, a Service
// selects the DaemonSet's pods and a ServiceMonitor the Service) and that
// every environment variable the gpulet container sets is a name gpulet's
// documentation knows. The Helm chart's ServiceMonitor, a custom resource,
// is checked as described at ServiceMonitorGVK.
package manifests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/api/pod"
	serviceapi "k8s.io/kubernetes/pkg/api/service"
	"k8s.io/kubernetes/pkg/apis/apps"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	"k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/apis/rbac"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	rbacvalidation "k8s.io/kubernetes/pkg/apis/rbac/validation"
	"k8s.io/kubernetes/pkg/capabilities"
)

// The API server checked against is started with --allow-privileged=true,
// as kubeadm's and the cluster fixture's are: the privileged variant
// docs/install.md describes for nodes without an NVIDIA-aware runtime must
// pass, and kube-apiserver's own default (false) would refuse it.
func init() {
	capabilities.Setup(true, 0)
}

// kind is how the API server creates one kind of object: what its registry
// strategy does to the object before validation (prepare), its Validate and
// its WarningsOnCreate.
type kind struct {
	namespaced bool
	prepare    func(runtime.Object) error
	validate   func(runtime.Object) field.ErrorList
	warnings   func(runtime.Object) []string
}

// kinds are the only kinds a manifest may hold. Anything else is refused:
// adding a kind to deploy/ means adding its validation here.
var kinds = map[schema.GroupVersionKind]kind{
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}: {
		namespaced: true,
		// pkg/registry/apps/daemonset: PrepareForCreate, Validate, WarningsOnCreate.
		prepare: func(obj runtime.Object) error {
			ds := obj.(*apps.DaemonSet)
			ds.Status = apps.DaemonSetStatus{}
			ds.Generation = 1
			if ds.Spec.TemplateGeneration < 1 {
				ds.Spec.TemplateGeneration = 1
			}
			before := ds.Spec.Template.DeepCopy()
			pod.DropDisabledTemplateFields(&ds.Spec.Template, nil)
			if !apiequality.Semantic.DeepEqual(before, &ds.Spec.Template) {
				return errors.New("spec.template: uses a field the API server drops (its feature gate is off by default)")
			}
			return nil
		},
		validate: func(obj runtime.Object) field.ErrorList {
			ds := obj.(*apps.DaemonSet)
			opts := pod.GetValidationOptionsFromPodTemplate(&ds.Spec.Template, nil)
			return appsvalidation.ValidateDaemonSet(ds, opts)
		},
		warnings: func(obj runtime.Object) []string {
			ds := obj.(*apps.DaemonSet)
			return pod.GetWarningsForPodTemplate(context.Background(),
				field.NewPath("spec", "template"), &ds.Spec.Template, nil)
		},
	},
	// pkg/registry/core/configmap: nothing to prepare, no warnings.
	{Group: "", Version: "v1", Kind: "ConfigMap"}: {
		namespaced: true,
		validate: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateConfigMap(obj.(*core.ConfigMap))
		},
	},
	// pkg/registry/core/serviceaccount: secret references are trimmed to
	// names; the deprecated enforce-mountable-secrets annotation warns.
	{Group: "", Version: "v1", Kind: "ServiceAccount"}: {
		namespaced: true,
		prepare: func(obj runtime.Object) error {
			sa := obj.(*core.ServiceAccount)
			for i, s := range sa.Secrets {
				sa.Secrets[i] = core.ObjectReference{Name: s.Name}
			}
			return nil
		},
		validate: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateServiceAccount(obj.(*core.ServiceAccount))
		},
		warnings: func(obj runtime.Object) []string {
			const annotation = "kubernetes.io/enforce-mountable-secrets"
			if _, ok := obj.(*core.ServiceAccount).Annotations[annotation]; ok {
				return []string{"metadata.annotations[" + annotation + "]: deprecated in v1.32+"}
			}
			return nil
		},
	},
	// pkg/registry/core/service: the REST storage's beginCreate first
	// copies clusterIP into clusterIPs (normalizeClusterIPs; then it
	// allocates addresses, which a headless Service does not need), the
	// strategy clears the status; ValidateServiceCreate,
	// GetWarningsForService.
	{Group: "", Version: "v1", Kind: "Service"}: {
		namespaced: true,
		prepare: func(obj runtime.Object) error {
			svc := obj.(*core.Service)
			if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
				svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
			}
			svc.Status = core.ServiceStatus{}
			return nil
		},
		validate: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateServiceCreate(obj.(*core.Service))
		},
		warnings: func(obj runtime.Object) []string {
			return serviceapi.GetWarningsForService(obj.(*core.Service), nil)
		},
	},
	// pkg/registry/rbac/clusterrole: nothing to prepare, no warnings.
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}: {
		validate: func(obj runtime.Object) field.ErrorList {
			return rbacvalidation.ValidateClusterRole(obj.(*rbac.ClusterRole),
				rbacvalidation.ClusterRoleValidationOptions{AllowInvalidLabelValueInSelector: false})
		},
	},
	// pkg/registry/rbac/clusterrolebinding: nothing to prepare, no warnings.
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}: {
		validate: func(obj runtime.Object) field.ErrorList {
			return rbacvalidation.ValidateClusterRoleBinding(obj.(*rbac.ClusterRoleBinding))
		},
	},
	// pkg/registry/rbac/role: nothing to prepare, no warnings.
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}: {
		namespaced: true,
		validate: func(obj runtime.Object) field.ErrorList {
			return rbacvalidation.ValidateRole(obj.(*rbac.Role))
		},
	},
	// pkg/registry/rbac/rolebinding: nothing to prepare, no warnings.
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}: {
		namespaced: true,
		validate: func(obj runtime.Object) field.ErrorList {
			return rbacvalidation.ValidateRoleBinding(obj.(*rbac.RoleBinding))
		},
	},
	// pkg/registry/core/namespace: status Active, the kubernetes finalizer.
	{Group: "", Version: "v1", Kind: "Namespace"}: {
		prepare: func(obj runtime.Object) error {
			ns := obj.(*core.Namespace)
			ns.Status = core.NamespaceStatus{Phase: core.NamespaceActive}
			for _, f := range ns.Spec.Finalizers {
				if f == core.FinalizerKubernetes {
					return nil
				}
			}
			ns.Spec.Finalizers = append(ns.Spec.Finalizers, core.FinalizerKubernetes)
			return nil
		},
		validate: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateNamespace(obj.(*core.Namespace))
		},
	},
}

// Object is one YAML document of a manifest file.
type Object struct {
	Source    string                  // "deploy/daemonset.yaml#2" (1-based document)
	GVK       schema.GroupVersionKind // from apiVersion and kind
	Versioned runtime.Object          // as decoded (k8s.io/api types), not defaulted
	Internal  runtime.Object          // defaulted, converted, as validated
}

// Name is "<Kind> <namespace>/<name>" for messages.
func (o Object) Name() string {
	m, err := meta.Accessor(o.Versioned)
	if err != nil {
		return o.GVK.Kind
	}
	if m.GetNamespace() == "" {
		return o.GVK.Kind + " " + m.GetName()
	}
	return o.GVK.Kind + " " + m.GetNamespace() + "/" + m.GetName()
}

var strictDecoder = json.NewSerializerWithOptions(json.DefaultMetaFactory,
	legacyscheme.Scheme, legacyscheme.Scheme,
	json.SerializerOptions{Yaml: true, Strict: true})

// LoadDir decodes every *.yaml file in dir (sorted by name) with LoadFile.
func LoadDir(dir string) ([]Object, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml files", dir)
	}
	sort.Strings(files)
	var all []Object
	for _, f := range files {
		objs, err := LoadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	return all, nil
}

// LoadFile decodes every document of one YAML file with Decode. Documents
// holding only comments are skipped; a file without any object is an error.
func LoadFile(path string) ([]Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs, err := SplitDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var objs []Object
	for i, doc := range docs {
		if doc == nil {
			continue
		}
		obj, err := Decode(doc, fmt.Sprintf("%s#%d", path, i+1))
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s: no Kubernetes object in the file", path)
	}
	return objs, nil
}

// SplitDocuments splits a multi-document YAML stream at "---" lines. A
// document that holds nothing but comments and blank lines comes back nil,
// keeping the numbering of the others.
func SplitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if onlyComments(doc) {
			docs = append(docs, nil)
			continue
		}
		docs = append(docs, doc)
	}
}

func onlyComments(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		t := strings.TrimSpace(line)
		if t != "" && t != "---" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// Decode strictly decodes one document into its k8s.io/api type, applies the
// API server's defaults, converts it to the internal type and runs the
// API server's create-time preparation, validation and warnings for its kind.
// source names the document in errors.
func Decode(doc []byte, source string) (Object, error) {
	o := Object{Source: source}
	var tm metav1.TypeMeta
	if err := utilyaml.Unmarshal(doc, &tm); err != nil {
		return o, fmt.Errorf("%s: %w", source, err)
	}
	o.GVK = schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	if o.GVK == ServiceMonitorGVK {
		return decodeServiceMonitor(doc, o)
	}
	k, ok := kinds[o.GVK]
	if !ok {
		return o, fmt.Errorf("%s: kind %q in apiVersion %q is not one this check knows (%s)",
			source, tm.Kind, tm.APIVersion, knownKinds())
	}
	versioned, gvk, err := strictDecoder.Decode(doc, nil, nil)
	if err != nil {
		// Strict errors (unknown or duplicate fields) come back with the object.
		return o, fmt.Errorf("%s: %w", source, err)
	}
	if *gvk != o.GVK {
		return o, fmt.Errorf("%s: decoded as %v, expected %v", source, *gvk, o.GVK)
	}
	o.Versioned = versioned.DeepCopyObject()

	legacyscheme.Scheme.Default(versioned)
	internalGV := schema.GroupVersion{Group: o.GVK.Group, Version: runtime.APIVersionInternal}
	internal, err := legacyscheme.Scheme.ConvertToVersion(versioned, internalGV)
	if err != nil {
		return o, fmt.Errorf("%s: converting to the internal type: %w", source, err)
	}
	o.Internal = internal
	if err := validateCreate(k, internal); err != nil {
		return o, fmt.Errorf("%s: %s: %w", source, o.Name(), err)
	}
	return o, nil
}

func knownKinds() string {
	names := []string{ServiceMonitorGVK.GroupVersion().String() + " " + ServiceMonitorGVK.Kind}
	for gvk := range kinds {
		names = append(names, gvk.GroupVersion().String()+" "+gvk.Kind)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// validateCreate does what the API server does with a decoded object on
// create before storing it: the request's namespace, the strategy's
// preparation, validation (which includes the metadata) and warnings.
func validateCreate(k kind, obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if k.namespaced && m.GetNamespace() == "" {
		// kubectl would put it in whatever namespace the user's context
		// names; a manifest for a node daemon must say where it goes.
		return errors.New("metadata.namespace: must be set")
	}
	if !k.namespaced && m.GetNamespace() != "" {
		return errors.New("metadata.namespace: must not be set on a cluster-scoped object")
	}
	if k.prepare != nil {
		if err := k.prepare(obj); err != nil {
			return err
		}
	}
	if errs := k.validate(obj); len(errs) > 0 {
		return errs.ToAggregate()
	}
	if k.warnings != nil {
		if w := k.warnings(obj); len(w) > 0 {
			return fmt.Errorf("the API server would warn: %s", strings.Join(w, "; "))
		}
	}
	return nil
}
