package chart

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The scheduler extender as the chart's defaults render it
// (docs/security.md): mutual TLS with material the chart generates, the
// admission policies, and a NetworkPolicy that admits no one.

// schedulerName is the common name of kube-scheduler's client certificate,
// the one name the extender serves by default (--allowed-client-names).
const schedulerName = "system:kube-scheduler"

// ingressAdmission is whom a NetworkPolicy admits to the pods it selects,
// as Kubernetes defines it: everyone when Ingress is not among its policy
// types (an empty list means Ingress) or when one of its rules has no
// `from`; else the peers its rules list, none when it has no rule.
func ingressAdmission(np *networkingv1.NetworkPolicy) (everyone bool, peers []networkingv1.NetworkPolicyPeer) {
	ingress := len(np.Spec.PolicyTypes) == 0
	for _, t := range np.Spec.PolicyTypes {
		ingress = ingress || t == networkingv1.PolicyTypeIngress
	}
	if !ingress {
		return true, nil
	}
	for _, rule := range np.Spec.Ingress {
		if len(rule.From) == 0 {
			return true, nil
		}
		peers = append(peers, rule.From...)
	}
	return false, peers
}

// expectPolicyBindings: every admission policy rendered has a binding
// that denies what it refuses.
func expectPolicyBindings(r *Rendered) error {
	bound := map[string]bool{}
	for _, o := range r.Objects {
		if b, ok := o.Versioned.(*admissionv1.ValidatingAdmissionPolicyBinding); ok &&
			len(b.Spec.ValidationActions) == 1 && b.Spec.ValidationActions[0] == admissionv1.Deny {
			bound[b.Spec.PolicyName] = true
		}
	}
	for name := range policies(r) {
		if !bound[name] {
			return fmt.Errorf("policy %s has no binding with validationActions [Deny]", name)
		}
	}
	return nil
}

// expectSecureExtender checks the extender of release fullname in ns as
// the defaults render it: both admission policies bound, a NetworkPolicy
// that admits no peer, mutual TLS for kube-scheduler's certificate name
// only, and the generated Secrets (expectGeneratedTLS).
func expectSecureExtender(r *Rendered, fullname, ns string) error {
	name := fullname + "-extender"
	d, np := r.Extender, r.ExtenderNetworkPolicy
	if d == nil || np == nil || r.ExtenderService == nil {
		return fmt.Errorf("extender Deployment %v, Service %v, NetworkPolicy %v: want all three",
			d != nil, r.ExtenderService != nil, np != nil)
	}
	if d.Name != name || d.Namespace != ns || np.Name != name || np.Namespace != ns || r.ExtenderService.Name != name {
		return fmt.Errorf("extender objects %s/%s, NetworkPolicy %s/%s, Service %s: want %s/%s",
			d.Namespace, d.Name, np.Namespace, np.Name, r.ExtenderService.Name, ns, name)
	}
	if everyone, peers := ingressAdmission(np); everyone || len(peers) != 0 {
		return fmt.Errorf("NetworkPolicy %s admits everyone=%v, peers %+v: want no one", name, everyone, peers)
	}
	args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--client-ca-file=/etc/gpulet-extender/tls/ca.crt", "--allowed-client-names=" + schedulerName + " "} {
		if !strings.Contains(args+" ", want) {
			return fmt.Errorf("extender arguments %q lack %q", args, want)
		}
	}
	if v := d.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != name+"-tls" {
		return fmt.Errorf("extender volumes %+v, want the Secret %s-tls", v, name)
	}
	if err := expectPolicyBindings(r); err != nil {
		return err
	}
	return expectGeneratedTLS(r, name, ns)
}

// secretCert checks that a generated Secret holds exactly ca.crt, tls.crt
// and tls.key (no CA key), a key that matches the certificate, and
// returns its certificate.
func secretCert(r *Rendered, name string) (*x509.Certificate, []byte, error) {
	s := r.Secrets[name]
	if s == nil {
		return nil, nil, fmt.Errorf("no Secret %s (Secrets: %v)", name, secretNames(r))
	}
	var keys []string
	for k := range s.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "ca.crt,tls.crt,tls.key" || s.Type != "kubernetes.io/tls" {
		return nil, nil, fmt.Errorf("Secret %s: type %s, keys %v; want kubernetes.io/tls with ca.crt, tls.crt, tls.key", name, s.Type, keys)
	}
	if _, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"]); err != nil {
		return nil, nil, fmt.Errorf("Secret %s: %w", name, err)
	}
	block, _ := pem.Decode(s.Data["tls.crt"])
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("Secret %s: tls.crt is not a PEM certificate", name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("Secret %s: tls.crt: %w", name, err)
	}
	return cert, s.Data["ca.crt"], nil
}

func secretNames(r *Rendered) []string {
	var names []string
	for n := range r.Secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// expectGeneratedTLS: <name>-tls holds a serving certificate for each of
// the Service's names that its ca.crt verifies, and
// <name>-scheduler-client a client certificate with the common name
// system:kube-scheduler that the same CA verifies for client
// authentication; the serving certificate does not carry that name.
func expectGeneratedTLS(r *Rendered, name, ns string) error {
	serving, ca, err := secretCert(r, name+"-tls")
	if err != nil {
		return err
	}
	client, clientCA, err := secretCert(r, name+"-scheduler-client")
	if err != nil {
		return err
	}
	if string(ca) != string(clientCA) {
		return fmt.Errorf("Secrets %s-tls and %s-scheduler-client hold different CAs", name, name)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return fmt.Errorf("Secret %s-tls: ca.crt holds no PEM certificate", name)
	}
	for _, dns := range []string{name, name + "." + ns, name + "." + ns + ".svc"} {
		if _, err := serving.Verify(x509.VerifyOptions{DNSName: dns, Roots: roots,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return fmt.Errorf("Secret %s-tls: the serving certificate for %s: %w", name, dns, err)
		}
	}
	if serving.Subject.CommonName == schedulerName {
		return fmt.Errorf("Secret %s-tls: the serving certificate is named %s", name, schedulerName)
	}
	for _, dns := range serving.DNSNames {
		if dns == schedulerName {
			return fmt.Errorf("Secret %s-tls: the serving certificate names %s", name, schedulerName)
		}
	}
	if client.Subject.CommonName != schedulerName {
		return fmt.Errorf("Secret %s-scheduler-client: common name %q, want %q", name, client.Subject.CommonName, schedulerName)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("Secret %s-scheduler-client: the client certificate: %w", name, err)
	}
	return nil
}
