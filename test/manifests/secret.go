package manifests

import (
	"crypto/tls"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// Secrets: the chart generates the extender's TLS material (its serving
// certificate and kube-scheduler's client certificate) when no Secret is
// named; deploy/ has none.
//
// pkg/registry/core/secret: nothing to prepare on create; ValidateSecret;
// WarningsOnCreate warns when a kubernetes.io/tls Secret's key does not
// match its certificate (the same tls.X509KeyPair check).
func init() {
	kinds[schema.GroupVersionKind{Group: "", Version: "v1", Kind: "Secret"}] = kind{
		namespaced: true,
		validate: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateSecret(obj.(*core.Secret))
		},
		warnings: func(obj runtime.Object) []string {
			s := obj.(*core.Secret)
			if s.Type != core.SecretTypeTLS {
				return nil
			}
			if _, err := tls.X509KeyPair(s.Data[core.TLSCertKey], s.Data[core.TLSPrivateKeyKey]); err != nil {
				return []string{err.Error()}
			}
			return nil
		},
	}
}
