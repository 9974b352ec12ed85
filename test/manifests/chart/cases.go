package chart

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"gpulet.dev/test/manifests"
)

// Case is one set of values the chart is checked with.
type Case struct {
	Name      string
	Values    string // a values file (helm -f)
	Release   string // "" = DefaultRelease
	Namespace string // "" = DefaultNamespace
	// Objects the user creates beside the release (YAML), checked with the
	// chart's: the ConfigMap config.name names, the namespace of
	// namespaceOverride.
	Extra string
	// Expect checks that the values did what docs/helm.md says.
	Expect func(r *Rendered) error
}

func (c Case) release() string {
	if c.Release == "" {
		return DefaultRelease
	}
	return c.Release
}

func (c Case) namespace() string {
	if c.Namespace == "" {
		return DefaultNamespace
	}
	return c.Namespace
}

// expectEnv checks the container's variables: a value, or "" for unset.
func expectEnv(r *Rendered, want map[string]string) error {
	for name, w := range want {
		got, ok := r.Env(name)
		if w == "" && ok {
			return fmt.Errorf("env %s=%q, want it unset", name, got)
		}
		if w != "" && got != w {
			return fmt.Errorf("env %s=%q (set: %v), want %q", name, got, ok, w)
		}
	}
	return nil
}

// expectConfig checks which ConfigMap and key the config volume reads.
func expectConfig(r *Rendered, configMap, key string) error {
	v := r.Volume("config")
	if v == nil || v.ConfigMap == nil {
		return fmt.Errorf("no config volume")
	}
	if v.ConfigMap.Name != configMap || len(v.ConfigMap.Items) != 1 || v.ConfigMap.Items[0].Key != key ||
		v.ConfigMap.Items[0].Path != "config.yaml" {
		return fmt.Errorf("config volume %+v, want ConfigMap %s key %s as config.yaml", v.ConfigMap, configMap, key)
	}
	return nil
}

func all(checks ...error) error {
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// Cases are the values the chart is checked with (docs/helm.md lists
// them): the defaults, then every value with each of its documented
// settings, values that work together in one case.
func Cases() []Case {
	return append([]Case{
		{
			Name: "defaults",
			Expect: func(r *Rendered) error {
				if r.ConfigMap == nil || !strings.Contains(r.ConfigMap.Data["config.yaml"], "version: v1") {
					return fmt.Errorf("no ConfigMap with the chart's config.yaml")
				}
				return all(expectConfig(r, "gpulet-config", "config.yaml"),
					expectEnv(r, map[string]string{"MIG_STRATEGY": "", "METRICS_ADDRESS": "", "PASS_DEVICE_SPECS": ""}),
					expectPolicies(r, map[string]string{
						"gpulet-node-agent":     "kube-system:gpulet",
						"gpulet-node-features":  "kube-system:gpulet",
						"gpulet-extender-nodes": "kube-system:gpulet-extender",
					}),
					expectSecureExtender(r, "gpulet", "kube-system"))
			},
		},
		{
			Name: "no node labels",
			Values: `
nodeLabels:
  enabled: false
`,
			Expect: func(r *Rendered) error {
				if _, ok := r.Env("GPULET_LABELS_PATCH_NODE"); ok {
					return fmt.Errorf("GPULET_LABELS_PATCH_NODE is set with nodeLabels.enabled=false")
				}
				if _, ok := r.Env("NODE_NAME"); !ok {
					return fmt.Errorf("NODE_NAME is missing")
				}
				if t := r.DaemonSet.Spec.Template.Spec.AutomountServiceAccountToken; t == nil || *t {
					return fmt.Errorf("the token is mounted with nodeLabels.enabled=false")
				}
				return nil
			},
		},
		{
			Name: "memory shares, no node labels",
			Values: `
memoryShares:
  enabled: true
nodeLabels:
  enabled: false
`,
			Expect: func(r *Rendered) error {
				if t := r.DaemonSet.Spec.Template.Spec.AutomountServiceAccountToken; t == nil || !*t {
					return fmt.Errorf("the token is not mounted with memoryShares.enabled=true")
				}
				if v := r.Volume("pod-resources"); v == nil || v.HostPath == nil || v.HostPath.Path != "/var/lib/kubelet/pod-resources" {
					return fmt.Errorf("pod-resources volume %+v, want hostPath /var/lib/kubelet/pod-resources", v)
				}
				var roles []string
				for _, o := range r.Objects {
					if role, ok := o.Versioned.(*rbacv1.ClusterRole); ok && role.Labels["app.kubernetes.io/component"] != extenderComponent {
						roles = append(roles, role.Name)
						if got := fmt.Sprint(role.Rules); role.Name != "gpulet-memory-shares" || got != manifests.MemorySharesRules {
							return fmt.Errorf("ClusterRole %s rules %s, want gpulet-memory-shares with %s", role.Name, got, manifests.MemorySharesRules)
						}
					}
				}
				if len(roles) != 1 {
					return fmt.Errorf("ClusterRoles %v, want gpulet-memory-shares only", roles)
				}
				return nil
			},
		},
		{
			Name: "NVIDIA flags",
			Values: `
migStrategy: mixed
failOnInitError: false
deviceListStrategy: [cdi-annotations, cdi-cri]
deviceIDStrategy: index
compatWithCPUManager: true
gdrcopyEnabled: true
gdsEnabled: true
mofedEnabled: true
deviceDiscoveryStrategy: nvml
mps:
  root: /run/nvidia/mps
cdi:
  nvidiaHookPath: /usr/local/nvidia/toolkit/nvidia-cdi-hook
  featureFlags: [one, two]
`,
			Expect: func(r *Rendered) error {
				return expectEnv(r, map[string]string{
					"MIG_STRATEGY": "mixed", "FAIL_ON_INIT_ERROR": "false",
					"DEVICE_LIST_STRATEGY": "cdi-annotations,cdi-cri", "DEVICE_ID_STRATEGY": "index",
					"PASS_DEVICE_SPECS": "true", "GDRCOPY_ENABLED": "true", "GDS_ENABLED": "true",
					"MOFED_ENABLED": "true", "DEVICE_DISCOVERY_STRATEGY": "nvml",
					"MPS_ROOT": "/run/nvidia/mps", "NVIDIA_CDI_HOOK_PATH": "/usr/local/nvidia/toolkit/nvidia-cdi-hook",
					"CDI_FEATURE_FLAGS": "one,two",
				})
			},
		},
		{
			Name: "NVIDIA flags, other settings",
			Values: `
migStrategy: single
failOnInitError: true
deviceListStrategy: volume-mounts
deviceIDStrategy: uuid
compatWithCPUManager: false
gdsEnabled: false
deviceDiscoveryStrategy: auto
cdi:
  featureFlags: one,two
`,
			Expect: func(r *Rendered) error {
				return expectEnv(r, map[string]string{
					"MIG_STRATEGY": "single", "FAIL_ON_INIT_ERROR": "true", "DEVICE_LIST_STRATEGY": "volume-mounts",
					"DEVICE_ID_STRATEGY": "uuid", "PASS_DEVICE_SPECS": "", "GDS_ENABLED": "false",
					"DEVICE_DISCOVERY_STRATEGY": "auto", "CDI_FEATURE_FLAGS": "one,two", "MPS_ROOT": "",
				})
			},
		},
		{
			Name:   "GPU Operator driver container",
			Values: "nvidiaDriverRoot: /run/nvidia/driver\n",
			Expect: func(r *Rendered) error {
				v := r.Volume("driver-root")
				if v == nil || v.HostPath == nil || v.HostPath.Path != "/run/nvidia/driver" {
					return fmt.Errorf("driver-root volume %+v, want hostPath /run/nvidia/driver", v)
				}
				return expectEnv(r, map[string]string{"NVIDIA_DRIVER_ROOT": "/run/nvidia/driver"})
			},
		},
		{
			Name:   "one config",
			Values: "config:\n  map:\n    time-slicing: |\n      version: v1\n      sharing:\n        timeSlicing:\n          resources:\n          - name: nvidia.com/gpu\n            replicas: 4\n",
			Expect: func(r *Rendered) error {
				if r.ConfigMap == nil || len(r.ConfigMap.Data) != 1 {
					return fmt.Errorf("ConfigMap %+v, want only config.map's entry", r.ConfigMap)
				}
				return expectConfig(r, "gpulet-config", "time-slicing")
			},
		},
		{
			Name:   "metrics",
			Values: "metrics:\n  enabled: true\n  port: 9500\n",
			Expect: func(r *Rendered) error {
				c := r.Container()
				if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9500 {
					return fmt.Errorf("ports %+v, want metrics 9500", c.Ports)
				}
				if r.Service != nil || r.ServiceMonitor != nil {
					return fmt.Errorf("a Service or ServiceMonitor without metrics.service.enabled")
				}
				return expectEnv(r, map[string]string{"METRICS_ADDRESS": ":9500"})
			},
		},
		{
			Name: "metrics Service and ServiceMonitor",
			Values: `
metrics:
  enabled: true
  service:
    enabled: true
    annotations:
      prometheus.io/scrape: "true"
  serviceMonitor:
    enabled: true
    interval: 30s
    labels:
      release: prometheus
`,
			Expect: func(r *Rendered) error {
				if r.Service == nil || r.Service.Spec.ClusterIP != corev1.ClusterIPNone || r.Service.Spec.Ports[0].Port != 9400 ||
					r.Service.Annotations["prometheus.io/scrape"] != "true" {
					return fmt.Errorf("Service %+v, want a headless one on port 9400 with the annotation", r.Service)
				}
				sm := r.ServiceMonitor
				if sm == nil || sm.Labels["release"] != "prometheus" || sm.Spec.Endpoints[0].Interval != "30s" {
					return fmt.Errorf("ServiceMonitor %+v, want label release=prometheus and interval 30s", sm)
				}
				return nil
			},
		},
		{
			Name:   "metrics Service only",
			Values: "metrics:\n  enabled: true\n  service:\n    enabled: true\n",
			Expect: func(r *Rendered) error {
				if r.Service == nil || r.ServiceMonitor != nil {
					return fmt.Errorf("want a Service and no ServiceMonitor")
				}
				return nil
			},
		},
		{
			Name: "scheduling",
			Values: `
nodeSelector:
  nvidia.com/gpu.present: "true"
affinity: null
tolerations:
- operator: Exists
priorityClassName: ""
runtimeClassName: nvidia
`,
			Expect: func(r *Rendered) error {
				s := r.DaemonSet.Spec.Template.Spec
				if s.NodeSelector["nvidia.com/gpu.present"] != "true" || s.Affinity != nil || len(s.Tolerations) != 1 ||
					s.PriorityClassName != "" || s.RuntimeClassName == nil || *s.RuntimeClassName != "nvidia" {
					return fmt.Errorf("pod spec scheduling: nodeSelector %v, affinity %v, tolerations %v, priority %q, runtimeClass %v",
						s.NodeSelector, s.Affinity, s.Tolerations, s.PriorityClassName, s.RuntimeClassName)
				}
				return nil
			},
		},
		{
			Name: "image",
			Values: `
image:
  repository: registry.internal/gpu/gpulet
  tag: 1.2.3
  pullPolicy: Always
imagePullSecrets:
- name: registry-credentials
`,
			Expect: func(r *Rendered) error {
				c := r.Container()
				s := r.DaemonSet.Spec.Template.Spec
				if c.Image != "registry.internal/gpu/gpulet:1.2.3" || c.ImagePullPolicy != corev1.PullAlways ||
					len(s.ImagePullSecrets) != 1 || s.ImagePullSecrets[0].Name != "registry-credentials" {
					return fmt.Errorf("image %s (%s), pull secrets %v", c.Image, c.ImagePullPolicy, s.ImagePullSecrets)
				}
				return nil
			},
		},
		{
			Name:    "names",
			Release: "nvdp",
			Values:  "nameOverride: gpu-plugin\n",
			Expect: func(r *Rendered) error {
				if r.DaemonSet.Name != "nvdp-gpu-plugin" || r.DaemonSet.Labels["app.kubernetes.io/name"] != "gpu-plugin" ||
					r.DaemonSet.Spec.Template.Spec.ServiceAccountName != "nvdp-gpu-plugin" {
					return fmt.Errorf("DaemonSet %s labels %v", r.DaemonSet.Name, r.DaemonSet.Labels)
				}
				return expectConfig(r, "nvdp-gpu-plugin-config", "config.yaml")
			},
		},
		{
			Name:   "full name and namespace",
			Values: "fullnameOverride: nvidia-device-plugin\nnamespaceOverride: gpu-operator\n",
			Extra:  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpu-operator\n",
			Expect: func(r *Rendered) error {
				for _, o := range r.Objects {
					if name := o.Name(); !strings.Contains(name, "/") {
						// Cluster-scoped: no namespace.
						if !strings.Contains(name, " nvidia-device-plugin") {
							return fmt.Errorf("%s, want it named nvidia-device-plugin*", name)
						}
						continue
					}
					if name := o.Name(); !strings.Contains(name, " gpu-operator/nvidia-device-plugin") {
						return fmt.Errorf("%s, want it named nvidia-device-plugin* in gpu-operator", name)
					}
				}
				return nil
			},
		},
		{
			Name:      "default namespace allowed",
			Namespace: "default",
			Values:    "allowDefaultNamespace: true\n",
			Expect: func(r *Rendered) error {
				if r.DaemonSet.Namespace != "default" {
					return fmt.Errorf("namespace %s", r.DaemonSet.Namespace)
				}
				return nil
			},
		},
		{
			Name: "pod",
			Values: `
podAnnotations:
  example.com/team: gpu
podSecurityContext:
  seccompProfile:
    type: Unconfined
updateStrategy:
  rollingUpdate:
    maxUnavailable: 10%
resources:
  limits:
    memory: 512Mi
`,
			Expect: func(r *Rendered) error {
				t := r.DaemonSet.Spec.Template
				ru := r.DaemonSet.Spec.UpdateStrategy.RollingUpdate
				lim := r.Container().Resources.Limits[corev1.ResourceMemory]
				if t.Annotations["example.com/team"] != "gpu" || t.Spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined ||
					ru == nil || ru.MaxUnavailable.String() != "10%" || lim.String() != "512Mi" {
					return fmt.Errorf("annotations %v, pod security %v, rolling update %v, memory limit %s",
						t.Annotations, t.Spec.SecurityContext, ru, lim.String())
				}
				return nil
			},
		},
		{
			Name: "privileged (no NVIDIA-aware runtime)",
			Values: `
securityContext:
  privileged: true
  allowPrivilegeEscalation: null
  capabilities: null
`,
			Expect: func(r *Rendered) error {
				sc := r.Container().SecurityContext
				if sc == nil || sc.Privileged == nil || !*sc.Privileged || sc.Capabilities != nil {
					return fmt.Errorf("securityContext %+v", sc)
				}
				return nil
			},
		},
		{
			Name: "MIG variant",
			// SYS_ADMIN, which NVIDIA's toolkit wants for the MIG
			// monitoring device, is in the default securityContext.
			Values: `
migStrategy: mixed
env:
- name: NVIDIA_MIG_MONITOR_DEVICES
  value: all
`,
			Expect: func(r *Rendered) error {
				sc := r.Container().SecurityContext
				if sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Add) != 1 || sc.Capabilities.Add[0] != "SYS_ADMIN" {
					return fmt.Errorf("securityContext %+v, want SYS_ADMIN added", sc)
				}
				return expectEnv(r, map[string]string{"MIG_STRATEGY": "mixed", "NVIDIA_MIG_MONITOR_DEVICES": "all"})
			},
		},
		{
			Name: "environment",
			Values: `
env:
- name: DP_DISABLE_HEALTHCHECKS
  value: "109"
- name: GPULET_HEALTH_QUIET_PERIOD
  value: 30s
`,
			Expect: func(r *Rendered) error {
				return expectEnv(r, map[string]string{"DP_DISABLE_HEALTHCHECKS": "109", "GPULET_HEALTH_QUIET_PERIOD": "30s"})
			},
		},
	}, slices.Concat(perNodeCases(), passthroughCases(), securityCases())...)
}

// configMapYAML is a ConfigMap in kube-system holding a config file at key.
func configMapYAML(name, key string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: kube-system\ndata:\n  %s: |\n    version: v1\n", name, key)
}
