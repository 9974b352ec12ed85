package manifests

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	"k8s.io/kubernetes/pkg/apis/apps"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/networking"
	"k8s.io/kubernetes/pkg/apis/rbac"
	"sigs.k8s.io/yaml"
)

// RuntimeEnv are variables the gpulet container may set that are meant for
// the container runtime that starts it, not for gpulet.
var RuntimeEnv = map[string]bool{
	"NVIDIA_VISIBLE_DEVICES":     true,
	"NVIDIA_DRIVER_CAPABILITIES": true,
	"NVIDIA_MIG_MONITOR_DEVICES": true,
	"NVIDIA_REQUIRE_CUDA":        true,
	"NVIDIA_DISABLE_REQUIRE":     true,
	"NVIDIA_MIG_CONFIG_DEVICES":  true,
}

var backquotedEnvName = regexp.MustCompile("`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=[^`]*)?`")

// deployDocs describe the manifests themselves; a name they mention is not
// evidence that gpulet reads it.
var deployDocs = map[string]bool{"install.md": true, "migration.md": true, "helm.md": true}

// DocumentedEnv collects every environment variable name written in
// backquotes (`NAME` or `NAME=value`) in the Markdown files of docsDir
// (except deployDocs): the names gpulet documents, so a misspelt variable in
// a manifest is caught.
func DocumentedEnv(docsDir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.md files", docsDir)
	}
	names := map[string]bool{}
	for _, f := range files {
		if deployDocs[filepath.Base(f)] {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range backquotedEnvName.FindAllStringSubmatch(string(data), -1) {
			names[m[1]] = true
		}
	}
	return names, nil
}

// Set is the objects of all manifest files, by kind.
type Set struct {
	DaemonSets      []*apps.DaemonSet
	ConfigMaps      map[string]*core.ConfigMap      // "<namespace>/<name>"
	ServiceAccounts map[string]*core.ServiceAccount // "<namespace>/<name>"
	Namespaces      map[string]*core.Namespace
	Services        []*core.Service
	ServiceMonitors []*ServiceMonitor
	ClusterRoles    map[string]*rbac.ClusterRole
	Bindings        []*rbac.ClusterRoleBinding
	Roles           map[string]*rbac.Role // "<namespace>/<name>"
	RoleBindings    []*rbac.RoleBinding
	Deployments     []*apps.Deployment
	Policies        map[string]*admissionregistration.ValidatingAdmissionPolicy
	PolicyBindings  []*admissionregistration.ValidatingAdmissionPolicyBinding
	NetworkPolicies []*networking.NetworkPolicy
	Secrets         map[string]*core.Secret // "<namespace>/<name>"
}

// NewSet indexes validated objects; two objects of one kind with one name are
// an error (the second `kubectl apply` would overwrite the first).
func NewSet(objs []Object) (*Set, error) {
	s := &Set{
		ConfigMaps:      map[string]*core.ConfigMap{},
		ServiceAccounts: map[string]*core.ServiceAccount{},
		Namespaces:      map[string]*core.Namespace{},
		ClusterRoles:    map[string]*rbac.ClusterRole{},
		Roles:           map[string]*rbac.Role{},
		Policies:        map[string]*admissionregistration.ValidatingAdmissionPolicy{},
		Secrets:         map[string]*core.Secret{},
	}
	seen := map[string]string{}
	for _, o := range objs {
		if prev, dup := seen[o.Name()]; dup {
			return nil, fmt.Errorf("%s: %s is also defined in %s", o.Source, o.Name(), prev)
		}
		seen[o.Name()] = o.Source
		switch v := o.Internal.(type) {
		case *apps.DaemonSet:
			s.DaemonSets = append(s.DaemonSets, v)
		case *core.ConfigMap:
			s.ConfigMaps[v.Namespace+"/"+v.Name] = v
		case *core.ServiceAccount:
			s.ServiceAccounts[v.Namespace+"/"+v.Name] = v
		case *core.Namespace:
			s.Namespaces[v.Name] = v
		case *core.Service:
			s.Services = append(s.Services, v)
		case *ServiceMonitor:
			s.ServiceMonitors = append(s.ServiceMonitors, v)
		case *rbac.ClusterRole:
			s.ClusterRoles[v.Name] = v
		case *rbac.ClusterRoleBinding:
			s.Bindings = append(s.Bindings, v)
		case *rbac.Role:
			s.Roles[v.Namespace+"/"+v.Name] = v
		case *rbac.RoleBinding:
			s.RoleBindings = append(s.RoleBindings, v)
		case *apps.Deployment:
			s.Deployments = append(s.Deployments, v)
		case *admissionregistration.ValidatingAdmissionPolicy:
			s.Policies[v.Name] = v
		case *admissionregistration.ValidatingAdmissionPolicyBinding:
			s.PolicyBindings = append(s.PolicyBindings, v)
		case *networking.NetworkPolicy:
			s.NetworkPolicies = append(s.NetworkPolicies, v)
		case *core.Secret:
			s.Secrets[v.Namespace+"/"+v.Name] = v
		default:
			return nil, fmt.Errorf("%s: no cross-checks for %T", o.Source, o.Internal)
		}
	}
	return s, nil
}

// builtinNamespaces exist in every cluster.
var builtinNamespaces = map[string]bool{"kube-system": true, "default": true}

// Check verifies what the API server cannot see object by object: every
// namespace used exists (built in or in the set), each DaemonSet's service
// account and ConfigMap volumes (with their keys) are in the set, every
// environment variable of its containers is in documented or RuntimeEnv (and
// one asking the runtime for GPUs comes with CAP_SYS_ADMIN),
// each Service selects a DaemonSet's pods and targets their ports, and each
// ServiceMonitor selects a Service and scrapes its ports.
func (s *Set) Check(documented map[string]bool) error {
	if len(s.DaemonSets) == 0 {
		return fmt.Errorf("no DaemonSet in the manifests")
	}
	for _, ds := range s.DaemonSets {
		if err := s.checkDaemonSet(ds, documented); err != nil {
			return fmt.Errorf("DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
		}
	}
	for key := range s.ConfigMaps {
		if err := s.checkNamespace(strings.SplitN(key, "/", 2)[0]); err != nil {
			return fmt.Errorf("ConfigMap %s: %w", key, err)
		}
	}
	for key := range s.ServiceAccounts {
		if err := s.checkNamespace(strings.SplitN(key, "/", 2)[0]); err != nil {
			return fmt.Errorf("ServiceAccount %s: %w", key, err)
		}
	}
	for key := range s.Secrets {
		if err := s.checkNamespace(strings.SplitN(key, "/", 2)[0]); err != nil {
			return fmt.Errorf("Secret %s: %w", key, err)
		}
	}
	for _, svc := range s.Services {
		if err := s.checkService(svc); err != nil {
			return fmt.Errorf("Service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
	}
	for _, sm := range s.ServiceMonitors {
		if err := s.checkServiceMonitor(sm); err != nil {
			return fmt.Errorf("ServiceMonitor %s/%s: %w", sm.Namespace, sm.Name, err)
		}
	}
	for _, b := range s.Bindings {
		if err := s.checkBinding(b); err != nil {
			return fmt.Errorf("ClusterRoleBinding %s: %w", b.Name, err)
		}
	}
	for _, b := range s.RoleBindings {
		if err := s.checkRoleBinding(b); err != nil {
			return fmt.Errorf("RoleBinding %s/%s: %w", b.Namespace, b.Name, err)
		}
	}
	for _, d := range s.Deployments {
		if err := s.checkDeployment(d); err != nil {
			return fmt.Errorf("Deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
	}
	for _, np := range s.NetworkPolicies {
		if err := s.checkNetworkPolicy(np); err != nil {
			return fmt.Errorf("NetworkPolicy %s/%s: %w", np.Namespace, np.Name, err)
		}
	}
	return s.checkPolicies()
}

// checkBinding: the role it binds and the service accounts it binds it to
// are in the set.
func (s *Set) checkBinding(b *rbac.ClusterRoleBinding) error {
	if b.RoleRef.Kind != "ClusterRole" || s.ClusterRoles[b.RoleRef.Name] == nil {
		return fmt.Errorf("roleRef: %s %s is not in the manifests", b.RoleRef.Kind, b.RoleRef.Name)
	}
	for i, sub := range b.Subjects {
		if sub.Kind != rbac.ServiceAccountKind {
			return fmt.Errorf("subjects[%d]: only service accounts of the manifests may be bound, not %s %s", i, sub.Kind, sub.Name)
		}
		if s.ServiceAccounts[sub.Namespace+"/"+sub.Name] == nil {
			return fmt.Errorf("subjects[%d]: ServiceAccount %s/%s is not in the manifests", i, sub.Namespace, sub.Name)
		}
	}
	return nil
}

// checkRoleBinding: its namespace exists, the Role it binds is in the set
// in that namespace, and it binds it only to service accounts of the set.
func (s *Set) checkRoleBinding(b *rbac.RoleBinding) error {
	if err := s.checkNamespace(b.Namespace); err != nil {
		return err
	}
	if b.RoleRef.Kind != "Role" || s.Roles[b.Namespace+"/"+b.RoleRef.Name] == nil {
		return fmt.Errorf("roleRef: %s %s is not in the manifests in namespace %s", b.RoleRef.Kind, b.RoleRef.Name, b.Namespace)
	}
	for i, sub := range b.Subjects {
		if sub.Kind != rbac.ServiceAccountKind {
			return fmt.Errorf("subjects[%d]: only service accounts of the manifests may be bound, not %s %s", i, sub.Kind, sub.Name)
		}
		if s.ServiceAccounts[sub.Namespace+"/"+sub.Name] == nil {
			return fmt.Errorf("subjects[%d]: ServiceAccount %s/%s is not in the manifests", i, sub.Namespace, sub.Name)
		}
	}
	return nil
}

// checkService: the Service selects the pods of a DaemonSet or Deployment
// of its namespace in the set, and every port's targetPort is a port of
// theirs (by name, or by number).
func (s *Set) checkService(svc *core.Service) error {
	if err := s.checkNamespace(svc.Namespace); err != nil {
		return err
	}
	if len(svc.Spec.Selector) == 0 {
		return fmt.Errorf("spec.selector: empty; it would select no pod of the manifests")
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	templates := s.podTemplates(svc.Namespace)
	names := make([]string, 0, len(templates))
	for name := range templates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t := templates[name]
		if !sel.Matches(labels.Set(t.Labels)) {
			continue
		}
		for i, p := range svc.Spec.Ports {
			if !podHasPort(&t.Spec, p.TargetPort.String(), p.TargetPort.IntValue()) {
				return fmt.Errorf("spec.ports[%d].targetPort: %s is not a container port of %s/%s",
					i, p.TargetPort.String(), name, svc.Namespace)
			}
		}
		return nil
	}
	return fmt.Errorf("spec.selector: %v selects the pods of no DaemonSet or Deployment in the manifests", svc.Spec.Selector)
}

func podHasPort(spec *core.PodSpec, name string, number int) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if (p.Name != "" && p.Name == name) || (number != 0 && int(p.ContainerPort) == number) {
				return true
			}
		}
	}
	return false
}

// checkServiceMonitor: the ServiceMonitor selects a Service of the set in
// the namespaces it looks in, and every endpoint names one of its ports.
func (s *Set) checkServiceMonitor(sm *ServiceMonitor) error {
	if err := s.checkNamespace(sm.Namespace); err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		return fmt.Errorf("spec.selector: %w", err)
	}
	namespaces := map[string]bool{sm.Namespace: true}
	if ns := sm.Spec.NamespaceSelector.MatchNames; len(ns) > 0 {
		namespaces = map[string]bool{}
		for _, n := range ns {
			namespaces[n] = true
		}
	}
	for _, svc := range s.Services {
		if !(sm.Spec.NamespaceSelector.Any || namespaces[svc.Namespace]) || !sel.Matches(labels.Set(svc.Labels)) {
			continue
		}
		for i, e := range sm.Spec.Endpoints {
			found := false
			for _, p := range svc.Spec.Ports {
				found = found || p.Name == e.Port
			}
			if !found {
				return fmt.Errorf("spec.endpoints[%d].port: Service %s/%s has no port named %q", i, svc.Namespace, svc.Name, e.Port)
			}
		}
		return nil
	}
	return fmt.Errorf("spec.selector: selects no Service of the manifests")
}

func (s *Set) checkNamespace(ns string) error {
	if builtinNamespaces[ns] || s.Namespaces[ns] != nil {
		return nil
	}
	return fmt.Errorf("namespace %q is neither built in nor defined in the manifests", ns)
}

func (s *Set) checkDaemonSet(ds *apps.DaemonSet, documented map[string]bool) error {
	if err := s.checkNamespace(ds.Namespace); err != nil {
		return err
	}
	spec := &ds.Spec.Template.Spec
	if sa := spec.ServiceAccountName; sa != "" && sa != "default" {
		if s.ServiceAccounts[ds.Namespace+"/"+sa] == nil {
			return fmt.Errorf("spec.template.spec.serviceAccountName: ServiceAccount %s/%s is not in the manifests", ds.Namespace, sa)
		}
	}
	for i, v := range spec.Volumes {
		cm := v.ConfigMap
		if cm == nil || (cm.Optional != nil && *cm.Optional) {
			continue
		}
		obj := s.ConfigMaps[ds.Namespace+"/"+cm.Name]
		if obj == nil {
			return fmt.Errorf("spec.template.spec.volumes[%d]: ConfigMap %s/%s is not in the manifests", i, ds.Namespace, cm.Name)
		}
		for j, item := range cm.Items {
			if _, ok := obj.Data[item.Key]; !ok {
				return fmt.Errorf("spec.template.spec.volumes[%d].configMap.items[%d]: ConfigMap %s/%s has no key %q", i, j, ds.Namespace, cm.Name, item.Key)
			}
		}
	}
	for i, c := range spec.Containers {
		for j, e := range c.Env {
			if !documented[e.Name] && !RuntimeEnv[e.Name] {
				return fmt.Errorf("spec.template.spec.containers[%d].env[%d]: %s is not a variable gpulet documents in docs/*.md", i, j, e.Name)
			}
		}
		if err := checkEnvRequest(&c); err != nil {
			return fmt.Errorf("spec.template.spec.containers[%d]: %w", i, err)
		}
	}
	return nil
}

// checkEnvRequest: a container that asks the runtime for GPUs through
// NVIDIA_VISIBLE_DEVICES must get them on a node set up for several tenants
// too (gpulet-runtime's acceptEnvvarUnprivileged: false, NVIDIA's
// accept-nvidia-visible-devices-envvar-when-unprivileged = false), where
// both runtimes honour the variable only with CAP_SYS_ADMIN in the
// container's bounding set: privileged, or SYS_ADMIN added.
func checkEnvRequest(c *core.Container) error {
	value, asks := "", false
	for _, e := range c.Env {
		if e.Name == "NVIDIA_VISIBLE_DEVICES" {
			value = e.Value
			asks = e.Value != "" && e.Value != "void"
		}
	}
	if !asks || hasSysAdmin(c.SecurityContext) {
		return nil
	}
	return fmt.Errorf("NVIDIA_VISIBLE_DEVICES=%s without CAP_SYS_ADMIN (securityContext.privileged or capabilities.add SYS_ADMIN): "+
		"a runtime with acceptEnvvarUnprivileged: false refuses it (docs/runtime.md)", value)
}

func hasSysAdmin(sc *core.SecurityContext) bool {
	if sc == nil {
		return false
	}
	if sc.Privileged != nil && *sc.Privileged {
		return true
	}
	if sc.Capabilities == nil {
		return false
	}
	for _, c := range sc.Capabilities.Add {
		if c == "SYS_ADMIN" || c == "CAP_SYS_ADMIN" {
			return true
		}
	}
	return false
}

// ConfigFile is the config file a DaemonSet's container reads: CONFIG_FILE,
// resolved through its volume mounts to a key of a ConfigMap in the set.
type ConfigFile struct {
	Path      string // in the container: /etc/gpulet/config.yaml
	ConfigMap string // "<namespace>/<name>"
	Key       string // config.yaml
	Data      string
}

// ConfigFiles returns the config file of every container that sets
// CONFIG_FILE, and every file of the directory of one that sets
// CONFIG_FILE_SRCDIR (configdir.go). A CONFIG_FILE that no ConfigMap volume
// provides is an error.
func (s *Set) ConfigFiles() ([]ConfigFile, error) {
	var out []ConfigFile
	for _, ds := range s.DaemonSets {
		spec := &ds.Spec.Template.Spec
		for _, c := range spec.Containers {
			for _, e := range c.Env {
				if e.Name == "CONFIG_FILE_SRCDIR" {
					files, err := s.resolveDir(ds.Namespace, spec, &c, e.Value)
					if err != nil {
						return nil, fmt.Errorf("DaemonSet %s/%s container %s: CONFIG_FILE_SRCDIR=%s: %w", ds.Namespace, ds.Name, c.Name, e.Value, err)
					}
					out = append(out, files...)
					continue
				}
				if e.Name != "CONFIG_FILE" {
					continue
				}
				cf, err := s.resolve(ds.Namespace, spec, &c, e.Value)
				if err != nil {
					return nil, fmt.Errorf("DaemonSet %s/%s container %s: CONFIG_FILE=%s: %w", ds.Namespace, ds.Name, c.Name, e.Value, err)
				}
				out = append(out, cf)
			}
		}
	}
	return out, nil
}

func (s *Set) resolve(ns string, spec *core.PodSpec, c *core.Container, file string) (ConfigFile, error) {
	file = path.Clean(file)
	for _, m := range c.VolumeMounts {
		dir := path.Clean(m.MountPath)
		if !strings.HasPrefix(file, dir+"/") {
			continue
		}
		rel := strings.TrimPrefix(file, dir+"/")
		if m.SubPath != "" {
			return ConfigFile{}, fmt.Errorf("mounted with subPath; the file would never see ConfigMap updates")
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm := s.ConfigMaps[ns+"/"+v.ConfigMap.Name]
			if cm == nil {
				return ConfigFile{}, fmt.Errorf("ConfigMap %s/%s is not in the manifests", ns, v.ConfigMap.Name)
			}
			key := rel
			if len(v.ConfigMap.Items) > 0 {
				key = ""
				for _, item := range v.ConfigMap.Items {
					if path.Clean(item.Path) == rel {
						key = item.Key
					}
				}
				if key == "" {
					return ConfigFile{}, fmt.Errorf("volume %s projects no item to %s", v.Name, rel)
				}
			}
			data, ok := cm.Data[key]
			if !ok {
				return ConfigFile{}, fmt.Errorf("ConfigMap %s/%s has no key %q", ns, cm.Name, key)
			}
			return ConfigFile{Path: file, ConfigMap: ns + "/" + cm.Name, Key: key, Data: data}, nil
		}
		return ConfigFile{}, fmt.Errorf("volume mount %s at %s is not a ConfigMap volume", m.Name, m.MountPath)
	}
	return ConfigFile{}, fmt.Errorf("no volume is mounted above it")
}

// CheckConfigSyntax is the check the manifests can make on a gpulet config
// file by themselves: YAML (a mapping, no duplicate keys) with `version: v1`
// (a missing version means v1 for gpulet and NVIDIA, but an example should
// say it). The full check is gpulet's own config parser.
func CheckConfigSyntax(data string) error {
	var doc map[string]interface{}
	if err := yaml.UnmarshalStrict([]byte(data), &doc); err != nil {
		return fmt.Errorf("not a YAML mapping: %w", err)
	}
	v, ok := doc["version"]
	if !ok {
		return fmt.Errorf("no `version:` key")
	}
	if v != "v1" {
		return fmt.Errorf("version: %v, expected v1", v)
	}
	return nil
}

// MemorySharesRules are the rules of the memory-share node agent's
// ClusterRole as fmt prints the rbac/v1 rules: the chart's
// (memoryShares.enabled) and deploy/optional/memory-shares-rbac.yaml's.
const MemorySharesRules = "[{[get patch] [] [nodes] [] []} {[get list watch] [] [pods] [] []}]"
