package chart

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// extenderValues admits kube-scheduler from the control-plane subnet
// 10.0.0.0/24 (the extender is on by default).
const extenderValues = `
extender:
  networkPolicy:
    from:
    - ipBlock:
        cidr: 10.0.0.0/24
`

// policies are the rendered admission policies by name, with the user
// each one's match condition compares the requesting user with.
func policies(r *Rendered) map[string]string {
	out := map[string]string{}
	for _, o := range r.Objects {
		if p, ok := o.Versioned.(*admissionv1.ValidatingAdmissionPolicy); ok {
			users := ""
			for _, c := range p.Spec.MatchConditions {
				users += c.Expression
			}
			out[p.Name] = users
		}
	}
	return out
}

// expectPolicies checks the rendered policies: exactly `want`, name ->
// the service account (namespace:name) its match condition names.
func expectPolicies(r *Rendered, want map[string]string) error {
	got := policies(r)
	if len(got) != len(want) {
		return fmt.Errorf("policies %v, want %v", got, want)
	}
	for name, account := range want {
		user := fmt.Sprintf(`request.userInfo.username == "system:serviceaccount:%s"`, account)
		if got[name] != user {
			return fmt.Errorf("policy %s matches %q, want %q", name, got[name], user)
		}
	}
	return nil
}

// securityCases: the admission policies, the extender with its mutual TLS
// and NetworkPolicy (docs/security.md), under release names and
// namespaces other than the defaults.
func securityCases() []Case {
	return []Case{
		{
			Name:      "defaults for another release and namespace",
			Release:   "gpu",
			Namespace: "gpu-system",
			Extra:     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpu-system\n",
			Expect: func(r *Rendered) error {
				return all(expectPolicies(r, map[string]string{
					"gpu-gpulet-node-agent":     "gpu-system:gpu-gpulet",
					"gpu-gpulet-node-features":  "gpu-system:gpu-gpulet",
					"gpu-gpulet-extender-nodes": "gpu-system:gpu-gpulet-extender",
				}), expectSecureExtender(r, "gpu-gpulet", "gpu-system"))
			},
		},
		{
			Name:      "kube-scheduler admitted, other client names, another release and namespace",
			Release:   "gpu",
			Namespace: "gpu-system",
			Extra:     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpu-system\n",
			Values: `
extender:
  enabled: true
  networkPolicy:
    from:
    - ipBlock:
        cidr: 10.0.0.0/24
    - podSelector:
        matchLabels:
          component: kube-scheduler
  tls:
    allowedClientNames: [kube-scheduler, scheduler.example.com]
`,
			Expect: func(r *Rendered) error {
				d, np := r.Extender, r.ExtenderNetworkPolicy
				if d == nil || np == nil {
					return fmt.Errorf("no extender Deployment or NetworkPolicy")
				}
				args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
				want := "--address=:12346 --tls-cert-file=/etc/gpulet-extender/tls/tls.crt " +
					"--tls-key-file=/etc/gpulet-extender/tls/tls.key --client-ca-file=/etc/gpulet-extender/tls/ca.crt " +
					"--allowed-client-names=kube-scheduler,scheduler.example.com --default-policy=binpack"
				if args != want {
					return fmt.Errorf("extender arguments %q, want %q", args, want)
				}
				if s := d.Spec.Template.Spec.Volumes[0].Secret; s == nil || s.SecretName != "gpu-gpulet-extender-tls" {
					return fmt.Errorf("TLS volume %+v, want Secret gpu-gpulet-extender-tls", d.Spec.Template.Spec.Volumes[0])
				}
				if d.Spec.Template.Spec.ServiceAccountName != "gpu-gpulet-extender" || d.Namespace != "gpu-system" {
					return fmt.Errorf("Deployment %s/%s runs as %s", d.Namespace, d.Name, d.Spec.Template.Spec.ServiceAccountName)
				}
				everyone, peers := ingressAdmission(np)
				if everyone || len(np.Spec.Ingress) != 1 || len(peers) != 2 ||
					peers[0].IPBlock == nil || peers[0].IPBlock.CIDR != "10.0.0.0/24" || peers[0].PodSelector != nil ||
					peers[1].IPBlock != nil || peers[1].PodSelector == nil || peers[1].PodSelector.MatchLabels["component"] != "kube-scheduler" ||
					len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != 12346 {
					return fmt.Errorf("NetworkPolicy ingress %+v, want port 12346 from 10.0.0.0/24 and kube-scheduler's pods only", np.Spec.Ingress)
				}
				return expectGeneratedTLS(r, "gpu-gpulet-extender", "gpu-system")
			},
		},
		{
			Name: "no admission policies",
			Values: extenderValues + `
nodePolicy:
  enabled: false
`,
			Expect: func(r *Rendered) error {
				return expectPolicies(r, map[string]string{})
			},
		},
		{
			Name: "extender without client certificates or NetworkPolicy",
			Values: `
extender:
  enabled: true
  replicas: 1
  port: 8443
  defaultPolicy: spread
  resources:
    limits:
      memory: 1Gi
  tls:
    secretName: extender-serving
    clientAuth: false
  networkPolicy:
    enabled: false
`,
			Expect: func(r *Rendered) error {
				d, np := r.Extender, r.ExtenderNetworkPolicy
				if d == nil || np != nil || len(r.Secrets) != 0 {
					return fmt.Errorf("Deployment %v, NetworkPolicy %v, Secrets %v: want the first only", d != nil, np != nil, secretNames(r))
				}
				c := d.Spec.Template.Spec.Containers[0]
				args := strings.Join(c.Args, " ")
				if strings.Contains(args, "--client-ca-file") || strings.Contains(args, "--allowed-client-names") ||
					!strings.Contains(args, "--address=:8443") ||
					!strings.Contains(args, "--default-policy=spread") || *d.Spec.Replicas != 1 ||
					c.Resources.Limits.Memory().String() != "1Gi" {
					return fmt.Errorf("extender arguments %q, replicas %d, limits %v", args, *d.Spec.Replicas, c.Resources.Limits)
				}
				if s := d.Spec.Template.Spec.Volumes[0].Secret; s == nil || s.SecretName != "extender-serving" {
					return fmt.Errorf("TLS volume %+v, want Secret extender-serving", d.Spec.Template.Spec.Volumes[0])
				}
				return nil
			},
		},
		{
			Name:   "node agent without a token has no policy",
			Values: "nodeLabels:\n  enabled: false\n",
			Expect: func(r *Rendered) error {
				return expectPolicies(r, map[string]string{"gpulet-extender-nodes": "kube-system:gpulet-extender"})
			},
		},
		{
			Name:   "no extender",
			Values: "extender:\n  enabled: false\n",
			Expect: func(r *Rendered) error {
				if r.Extender != nil || r.ExtenderService != nil || r.ExtenderNetworkPolicy != nil || len(r.Secrets) != 0 {
					return fmt.Errorf("extender objects rendered with extender.enabled=false")
				}
				return expectPolicies(r, map[string]string{"gpulet-node-agent": "kube-system:gpulet", "gpulet-node-features": "kube-system:gpulet"})
			},
		},
		{
			Name:   "generated serving certificate without client certificates",
			Values: "extender:\n  tls:\n    clientAuth: false\n",
			Expect: func(r *Rendered) error {
				if names := secretNames(r); strings.Join(names, ",") != "gpulet-extender-tls" {
					return fmt.Errorf("Secrets %v, want gpulet-extender-tls only", names)
				}
				if _, _, err := secretCert(r, "gpulet-extender-tls"); err != nil {
					return err
				}
				args := strings.Join(r.Extender.Spec.Template.Spec.Containers[0].Args, " ")
				if strings.Contains(args, "--client-ca-file") || strings.Contains(args, "--allowed-client-names") {
					return fmt.Errorf("extender arguments %q: client certificates asked for with clientAuth=false", args)
				}
				return nil
			},
		},
		{
			Name: "own TLS Secret with client certificates",
			Values: `
extender:
  tls:
    secretName: extender-mtls
`,
			Expect: func(r *Rendered) error {
				d := r.Extender
				if d == nil || len(r.Secrets) != 0 {
					return fmt.Errorf("Deployment %v, Secrets %v: want the Deployment and no Secret", d != nil, secretNames(r))
				}
				if s := d.Spec.Template.Spec.Volumes[0].Secret; s == nil || s.SecretName != "extender-mtls" {
					return fmt.Errorf("TLS volume %+v, want Secret extender-mtls", d.Spec.Template.Spec.Volumes[0])
				}
				if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--client-ca-file=") {
					return fmt.Errorf("extender arguments %q: no --client-ca-file", args)
				}
				return nil
			},
		},
	}
}
