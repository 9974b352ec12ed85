package manifests

import (
	"encoding/json"
	"fmt"
	"regexp"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// ServiceMonitorGVK is prometheus-operator's ServiceMonitor, a custom
// resource: no API server here knows its schema, and prometheus-operator's
// Go types would pull a second Kubernetes version into this module. So it
// is decoded strictly into ServiceMonitor below, which has exactly the
// fields of the CRD (monitoring.coreos.com_servicemonitors.yaml) that
// gpulet's chart writes, with the CRD's names and patterns: a field the
// chart adds without adding it here is an error, not silently accepted.
var ServiceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// ServiceMonitor is the subset of monitoring.coreos.com/v1 ServiceMonitor
// described at ServiceMonitorGVK.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ServiceMonitorSpec `json:"spec"`
}

// ServiceMonitorSpec is the CRD's spec: which Services, in which
// namespaces, and how each of their ports is scraped.
type ServiceMonitorSpec struct {
	Selector          metav1.LabelSelector `json:"selector"`
	NamespaceSelector struct {
		Any        bool     `json:"any,omitempty"`
		MatchNames []string `json:"matchNames,omitempty"`
	} `json:"namespaceSelector,omitempty"`
	Endpoints []ServiceMonitorEndpoint `json:"endpoints"`
}

// ServiceMonitorEndpoint is one scraped port of the selected Services.
type ServiceMonitorEndpoint struct {
	Port     string `json:"port,omitempty"`
	Path     string `json:"path,omitempty"`
	Interval string `json:"interval,omitempty"`
}

// DeepCopyObject makes ServiceMonitor a runtime.Object.
func (s *ServiceMonitor) DeepCopyObject() runtime.Object {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var out ServiceMonitor
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return &out
}

// The CRD's pattern for a Prometheus duration (interval, scrapeTimeout).
var promDuration = regexp.MustCompile(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)

func decodeServiceMonitor(doc []byte, o Object) (Object, error) {
	var sm ServiceMonitor
	if err := yaml.UnmarshalStrict(doc, &sm); err != nil {
		return o, fmt.Errorf("%s: %w", o.Source, err)
	}
	o.Versioned = sm.DeepCopyObject()
	o.Internal = &sm
	if err := validateServiceMonitor(&sm).ToAggregate(); err != nil {
		return o, fmt.Errorf("%s: %s: %w", o.Source, o.Name(), err)
	}
	return o, nil
}

func validateServiceMonitor(sm *ServiceMonitor) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&sm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, metav1validation.ValidateLabelSelector(&sm.Spec.Selector,
		metav1validation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
	if len(sm.Spec.Endpoints) == 0 {
		errs = append(errs, field.Required(spec.Child("endpoints"), "a ServiceMonitor without endpoints scrapes nothing"))
	}
	for i, e := range sm.Spec.Endpoints {
		p := spec.Child("endpoints").Index(i)
		if e.Port == "" {
			errs = append(errs, field.Required(p.Child("port"), "the Service port to scrape, by name"))
		}
		if e.Interval != "" && !promDuration.MatchString(e.Interval) {
			errs = append(errs, field.Invalid(p.Child("interval"), e.Interval, "not a Prometheus duration (e.g. 30s, 1m)"))
		}
	}
	return errs
}
