package manifests

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	"k8s.io/kubernetes/pkg/apis/apps"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/networking"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	networkingvalidation "k8s.io/kubernetes/pkg/apis/networking/validation"
)

// The kinds of the admission policies (deploy/node-policy.yaml, the
// chart's policies), the extender's NetworkPolicy and Deployment.
//
// ValidatingAdmissionPolicy and its binding are decoded strictly, defaulted
// and converted as the others, but their validation here is only the
// metadata's and the fields the policies rely on:
// k8s.io/kubernetes/pkg/apis/admissionregistration/validation compiles the
// CEL expressions and pulls in the API server's tracing and network-proxy
// modules, which this module does not carry. The CEL is compiled and run
// by a real kube-apiserver in test/integration/node_policy_apiserver_test.
func init() {
	kinds[schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}] = kind{
		// pkg/registry/admissionregistration/validatingadmissionpolicy.
		prepare: func(obj runtime.Object) error {
			p := obj.(*admissionregistration.ValidatingAdmissionPolicy)
			p.Status = admissionregistration.ValidatingAdmissionPolicyStatus{}
			p.Generation = 1
			return nil
		},
		validate: func(obj runtime.Object) field.ErrorList {
			return validatePolicy(obj.(*admissionregistration.ValidatingAdmissionPolicy))
		},
	}
	kinds[schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}] = kind{
		prepare: func(obj runtime.Object) error {
			obj.(*admissionregistration.ValidatingAdmissionPolicyBinding).Generation = 1
			return nil
		},
		validate: func(obj runtime.Object) field.ErrorList {
			b := obj.(*admissionregistration.ValidatingAdmissionPolicyBinding)
			errs := apivalidation.ValidateObjectMeta(&b.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
			if b.Spec.PolicyName == "" {
				errs = append(errs, field.Required(field.NewPath("spec", "policyName"), ""))
			}
			if len(b.Spec.ValidationActions) == 0 {
				errs = append(errs, field.Required(field.NewPath("spec", "validationActions"), ""))
			}
			return errs
		},
	}
	// pkg/registry/networking/networkpolicy (its warnings are unexported;
	// they are about ipBlock CIDRs with host bits set, checked below).
	kinds[schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}] = kind{
		namespaced: true,
		prepare: func(obj runtime.Object) error {
			obj.(*networking.NetworkPolicy).Generation = 1
			return nil
		},
		validate: func(obj runtime.Object) field.ErrorList {
			np := obj.(*networking.NetworkPolicy)
			return networkingvalidation.ValidateNetworkPolicy(np, networkingvalidation.ValidationOptionsForNetworking(np, nil))
		},
	}
	// pkg/registry/apps/deployment.
	kinds[schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}] = kind{
		namespaced: true,
		prepare: func(obj runtime.Object) error {
			d := obj.(*apps.Deployment)
			d.Status = apps.DeploymentStatus{}
			d.Generation = 1
			return nil
		},
		validate: func(obj runtime.Object) field.ErrorList {
			d := obj.(*apps.Deployment)
			return appsvalidation.ValidateDeployment(d, pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil))
		},
		warnings: func(obj runtime.Object) []string {
			d := obj.(*apps.Deployment)
			return pod.GetWarningsForPodTemplate(context.Background(), field.NewPath("spec", "template"), &d.Spec.Template, nil)
		},
	}
}

// validatePolicy: the metadata, and what gpulet's policies rely on: they
// fail closed, match by the requesting user, and every validation has an
// expression and a message.
func validatePolicy(p *admissionregistration.ValidatingAdmissionPolicy) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&p.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistration.Fail {
		errs = append(errs, field.Invalid(spec.Child("failurePolicy"), p.Spec.FailurePolicy, "must be Fail: a policy that cannot be evaluated must refuse"))
	}
	if p.Spec.MatchConstraints == nil || len(p.Spec.MatchConstraints.ResourceRules) == 0 {
		errs = append(errs, field.Required(spec.Child("matchConstraints", "resourceRules"), ""))
	}
	if len(p.Spec.Validations) == 0 {
		errs = append(errs, field.Required(spec.Child("validations"), ""))
	}
	for i, v := range p.Spec.Validations {
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(spec.Child("validations").Index(i).Child("expression"), ""))
		}
		if v.Message == "" && v.MessageExpression == "" {
			errs = append(errs, field.Required(spec.Child("validations").Index(i).Child("message"), "say what is refused"))
		}
	}
	return errs
}

// serviceAccountUser matches the service-account user names a policy's
// match conditions compare the requesting user with.
var serviceAccountUser = regexp.MustCompile(`system:serviceaccount:([a-z0-9.-]+):([a-z0-9.-]+)`)

// PolicyAccounts are the service accounts ("<namespace>/<name>", sorted) a
// policy's match conditions name.
func PolicyAccounts(p *admissionregistration.ValidatingAdmissionPolicy) []string {
	var out []string
	for _, c := range p.Spec.MatchConditions {
		for _, m := range serviceAccountUser.FindAllStringSubmatch(c.Expression, -1) {
			out = append(out, m[1]+"/"+m[2])
		}
	}
	sort.Strings(out)
	return out
}

// checkPolicies: every policy is bound and names in its match conditions
// only service accounts of the set (a policy that names another release's
// account, or a hard-coded one, guards nothing); every binding binds a
// policy of the set.
func (s *Set) checkPolicies() error {
	bound := map[string]bool{}
	for _, b := range s.PolicyBindings {
		if s.Policies[b.Spec.PolicyName] == nil {
			return fmt.Errorf("ValidatingAdmissionPolicyBinding %s: spec.policyName: %s is not in the manifests", b.Name, b.Spec.PolicyName)
		}
		bound[b.Spec.PolicyName] = true
	}
	for name, p := range s.Policies {
		if !bound[name] {
			return fmt.Errorf("ValidatingAdmissionPolicy %s: no binding in the manifests", name)
		}
		accounts := PolicyAccounts(p)
		if len(accounts) == 0 {
			return fmt.Errorf("ValidatingAdmissionPolicy %s: spec.matchConditions: names no service account", name)
		}
		for _, a := range accounts {
			if s.ServiceAccounts[a] == nil {
				return fmt.Errorf("ValidatingAdmissionPolicy %s: spec.matchConditions: ServiceAccount %s is not in the manifests", name, a)
			}
		}
	}
	return nil
}

// podTemplates are the pod templates of the set's DaemonSets and
// Deployments in namespace ns, by "<Kind> <name>".
func (s *Set) podTemplates(ns string) map[string]*core.PodTemplateSpec {
	out := map[string]*core.PodTemplateSpec{}
	for _, ds := range s.DaemonSets {
		if ds.Namespace == ns {
			out["DaemonSet "+ds.Name] = &ds.Spec.Template
		}
	}
	for _, d := range s.Deployments {
		if d.Namespace == ns {
			out["Deployment "+d.Name] = &d.Spec.Template
		}
	}
	return out
}

// checkNetworkPolicy: it selects the pods of a workload of the set, and
// every port it admits is one of theirs.
func (s *Set) checkNetworkPolicy(np *networking.NetworkPolicy) error {
	if err := s.checkNamespace(np.Namespace); err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		return fmt.Errorf("spec.podSelector: %w", err)
	}
	if sel.Empty() {
		return fmt.Errorf("spec.podSelector: empty; it would apply to every pod of the namespace")
	}
	for name, t := range s.podTemplates(np.Namespace) {
		if !sel.Matches(labels.Set(t.Labels)) {
			continue
		}
		for i, rule := range np.Spec.Ingress {
			for j, p := range rule.Ports {
				if p.Port != nil && !podHasPort(&t.Spec, p.Port.String(), p.Port.IntValue()) {
					return fmt.Errorf("spec.ingress[%d].ports[%d]: %s is not a container port of %s", i, j, p.Port.String(), name)
				}
			}
		}
		return nil
	}
	return fmt.Errorf("spec.podSelector: selects the pods of no workload in the manifests")
}

// checkDeployment: its namespace and service account are in the set.
func (s *Set) checkDeployment(d *apps.Deployment) error {
	if err := s.checkNamespace(d.Namespace); err != nil {
		return err
	}
	if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "" && sa != "default" {
		if s.ServiceAccounts[d.Namespace+"/"+sa] == nil {
			return fmt.Errorf("spec.template.spec.serviceAccountName: ServiceAccount %s/%s is not in the manifests", d.Namespace, sa)
		}
	}
	return nil
}
