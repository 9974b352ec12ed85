package manifests

import (
	"fmt"
	"path"
	"sort"

	"k8s.io/kubernetes/pkg/apis/core"
)

// resolveDir resolves CONFIG_FILE_SRCDIR, gpulet's directory of named
// configurations (one per node, docs/configuration.md): a ConfigMap volume
// mounted exactly there, whole (no items: every key a configuration, and
// the kubelet keeps the files in step with the ConfigMap), not with subPath.
// It returns one ConfigFile per key, sorted, and checks that DEFAULT_CONFIG,
// when the container sets it, names one of them.
func (s *Set) resolveDir(ns string, spec *core.PodSpec, c *core.Container, dir string) ([]ConfigFile, error) {
	dir = path.Clean(dir)
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) != dir {
			continue
		}
		if m.SubPath != "" {
			return nil, fmt.Errorf("mounted with subPath; the directory would never see ConfigMap updates")
		}
		cm, err := s.dirConfigMap(ns, spec, m.Name)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(cm.Data))
		for k := range cm.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []ConfigFile
		for _, k := range keys {
			out = append(out, ConfigFile{Path: path.Join(dir, k), ConfigMap: ns + "/" + cm.Name, Key: k, Data: cm.Data[k]})
		}
		for _, e := range c.Env {
			if e.Name == "DEFAULT_CONFIG" && e.Value != "" {
				if _, ok := cm.Data[e.Value]; !ok {
					return nil, fmt.Errorf("DEFAULT_CONFIG=%s: ConfigMap %s/%s has no key %q", e.Value, ns, cm.Name, e.Value)
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no volume is mounted there")
}

// dirConfigMap is the ConfigMap of the pod's volume `name`, which must be
// a ConfigMap volume projecting every key.
func (s *Set) dirConfigMap(ns string, spec *core.PodSpec, name string) (*core.ConfigMap, error) {
	for _, v := range spec.Volumes {
		if v.Name != name {
			continue
		}
		if v.ConfigMap == nil {
			return nil, fmt.Errorf("volume %s is not a ConfigMap volume", name)
		}
		if len(v.ConfigMap.Items) > 0 {
			return nil, fmt.Errorf("volume %s projects only some keys (items); the directory must hold every configuration", name)
		}
		cm := s.ConfigMaps[ns+"/"+v.ConfigMap.Name]
		if cm == nil {
			return nil, fmt.Errorf("ConfigMap %s/%s is not in the manifests", ns, v.ConfigMap.Name)
		}
		if len(cm.Data) == 0 {
			return nil, fmt.Errorf("ConfigMap %s/%s holds no configuration", ns, cm.Name)
		}
		return cm, nil
	}
	return nil, fmt.Errorf("volume %s is not in the pod", name)
}
