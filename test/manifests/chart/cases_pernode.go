package chart

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// nodeConfigRules are the rules of the ClusterRole <name>-node-config as
// fmt prints the rbac/v1 rules: gpulet reads and watches its Node's label
// and patches its annotations (docs/configuration.md).
const nodeConfigRules = `[{[get list watch patch] [] [nodes] [] []}]`

// expectPerNode checks the rendering of one configuration per node: the
// whole ConfigMap mounted at /etc/gpulet/configs (CONFIG_FILE_SRCDIR), no
// CONFIG_FILE, the token mounted, the node's name given, RBAC
// <name>-node-config bound to gpulet's service account, and the variables
// in env (value, or "" for unset).
func expectPerNode(r *Rendered, name, configMap string, env map[string]string) error {
	v := r.Volume("config")
	if v == nil || v.ConfigMap == nil || v.ConfigMap.Name != configMap || len(v.ConfigMap.Items) != 0 {
		return fmt.Errorf("config volume %+v, want all of ConfigMap %s", v, configMap)
	}
	if t := r.DaemonSet.Spec.Template.Spec.AutomountServiceAccountToken; t == nil || !*t {
		return fmt.Errorf("the token is not mounted; gpulet must read its Node's label")
	}
	if _, ok := r.Env("NODE_NAME"); !ok {
		return fmt.Errorf("NODE_NAME is missing")
	}
	want := map[string]string{"CONFIG_FILE_SRCDIR": "/etc/gpulet/configs", "CONFIG_FILE": ""}
	for k, v := range env {
		want[k] = v
	}
	return all(expectMount(r.Container(), "config", "/etc/gpulet/configs", true),
		expectEnv(r, want), expectNodeConfigRBAC(r, name))
}

// expectNodeConfigRBAC checks the ClusterRole and ClusterRoleBinding
// <name>-node-config ("" for none rendered).
func expectNodeConfigRBAC(r *Rendered, name string) error {
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	for _, o := range r.Objects {
		switch x := o.Versioned.(type) {
		case *rbacv1.ClusterRole:
			if strings.HasSuffix(x.Name, "-node-config") {
				role = x
			}
		case *rbacv1.ClusterRoleBinding:
			if strings.HasSuffix(x.Name, "-node-config") {
				binding = x
			}
		}
	}
	if name == "" {
		if role != nil || binding != nil {
			return fmt.Errorf("node-config RBAC rendered with one config file")
		}
		return nil
	}
	if role == nil || binding == nil || role.Name != name+"-node-config" || binding.RoleRef.Name != role.Name {
		return fmt.Errorf("no ClusterRole and ClusterRoleBinding %s-node-config", name)
	}
	if got := fmt.Sprint(role.Rules); got != nodeConfigRules {
		return fmt.Errorf("ClusterRole %s rules %s, want %s", role.Name, got, nodeConfigRules)
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Name != name {
		return fmt.Errorf("ClusterRoleBinding %s subjects %+v, want ServiceAccount %s", binding.Name, binding.Subjects, name)
	}
	return nil
}

// twoConfigs is NVIDIA's chart's example of config.map: the configuration
// of unlabelled nodes and one a label picks.
const twoConfigs = `
config:
  map:
    default: |-
      version: v1
    mig-mixed: |-
      version: v1
      flags:
        migStrategy: mixed
`

// perNodeCases: config.map with several entries, config.name, and what
// may go with them (docs/helm.md, "One configuration per node").
func perNodeCases() []Case {
	return []Case{
		{
			Name:   "several configs",
			Values: twoConfigs,
			Expect: func(r *Rendered) error {
				if r.ConfigMap == nil || len(r.ConfigMap.Data) != 2 || !strings.Contains(r.ConfigMap.Data["mig-mixed"], "mixed") {
					return fmt.Errorf("ConfigMap %+v, want the two configs of config.map", r.ConfigMap)
				}
				return all(expectPerNode(r, "gpulet", "gpulet-config", map[string]string{"DEFAULT_CONFIG": "", "FALLBACK_STRATEGIES": ""}),
					expectPolicies(r, map[string]string{
						"gpulet-node-agent":     "kube-system:gpulet",
						"gpulet-node-features":  "kube-system:gpulet",
						"gpulet-extender-nodes": "kube-system:gpulet-extender",
					}))
			},
		},
		{
			Name: "several configs, a default and fallbacks, no node labels",
			Values: twoConfigs + `  default: mig-mixed
  fallbackStrategies: [named, empty]
nodeLabels:
  enabled: false
extender:
  enabled: false
`,
			Expect: func(r *Rendered) error {
				// The node agent's policy still confines what the token may write.
				return all(expectPerNode(r, "gpulet", "gpulet-config",
					map[string]string{"DEFAULT_CONFIG": "mig-mixed", "FALLBACK_STRATEGIES": "named,empty"}),
					expectPolicies(r, map[string]string{"gpulet-node-agent": "kube-system:gpulet"}))
			},
		},
		{
			Name:   "existing ConfigMap",
			Values: "config:\n  name: my-gpulet-config\n",
			Extra:  configMapYAML("my-gpulet-config", "config.yaml"),
			Expect: func(r *Rendered) error {
				if r.ConfigMap != nil {
					return fmt.Errorf("the chart made ConfigMap %s; config.name names an existing one", r.ConfigMap.Name)
				}
				return expectPerNode(r, "gpulet", "my-gpulet-config", map[string]string{"DEFAULT_CONFIG": ""})
			},
		},
		{
			Name:    "existing ConfigMap, named default, another release",
			Release: "nvdp",
			Values:  "config:\n  name: my-gpulet-config\n  default: mig-mixed\n",
			Extra:   configMapYAML("my-gpulet-config", "mig-mixed"),
			Expect: func(r *Rendered) error {
				return expectPerNode(r, "nvdp-gpulet", "my-gpulet-config", map[string]string{"DEFAULT_CONFIG": "mig-mixed"})
			},
		},
		{
			Name: "one config named as the default",
			Values: `
config:
  map:
    time-slicing: |
      version: v1
  default: time-slicing
  fallbackStrategies: [single]
`,
			Expect: func(r *Rendered) error {
				// One entry: one file, as without config.default; the
				// fallbacks concern only one configuration per node.
				return all(expectConfig(r, "gpulet-config", "time-slicing"), expectNodeConfigRBAC(r, ""),
					expectEnv(r, map[string]string{"CONFIG_FILE": "/etc/gpulet/config.yaml", "CONFIG_FILE_SRCDIR": "",
						"DEFAULT_CONFIG": "", "FALLBACK_STRATEGIES": ""}),
					expectMount(r.Container(), "config", "/etc/gpulet", true))
			},
		},
		{
			Name: "several configs with passthrough, GPUs listed",
			Values: twoConfigs + `passthrough:
  enabled: true
  bind:
    gpus: ["0000:9d:00.0"]
`,
			Expect: func(r *Rendered) error {
				ic := r.DaemonSet.Spec.Template.Spec.InitContainers
				if len(ic) != 1 || len(ic[0].Args) != 1 {
					return fmt.Errorf("init containers %+v, want vfio-bind of the listed GPU", ic)
				}
				for _, m := range ic[0].VolumeMounts {
					if m.Name == "config" {
						return fmt.Errorf("the init container mounts the config volume without fromConfig")
					}
				}
				return expectPerNode(r, "gpulet", "gpulet-config", nil)
			},
		},
	}
}
