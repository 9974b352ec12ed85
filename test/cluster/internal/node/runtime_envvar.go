package node

import (
	"fmt"
	"os"
	"regexp"

	"sigs.k8s.io/yaml"
)

// The node runs gpulet-runtime in the multi-tenant setting of
// docs/runtime.md: acceptEnvvarUnprivileged: false, so an unprivileged
// container's NVIDIA_VISIBLE_DEVICES is refused and GPUs come only through
// the kubelet (volume-mounts, cdi-annotations, DRA's CDI devices). gpulet's
// own DaemonSets, as shipped, ask through NVIDIA_VISIBLE_DEVICES with
// CAP_SYS_ADMIN in their bounding set, and every one of their pods started
// under this setting proves they still work in it.
//
// The envvar device-list strategy (the plugin's default, which many
// scenarios run) hands pods their GPUs through that same variable; it is
// the single-tenant setting and needs acceptEnvvarUnprivileged: true. So
// the fixture opens it for exactly the time a gpulet config with that
// strategy is deployed, and writes it before gpulet's pod is (re)created.

var acceptEnvvarLine = regexp.MustCompile(`(?m)^acceptEnvvarUnprivileged: .*$`)

// usesEnvvarStrategy reports whether a gpulet config file gives pods their
// GPUs through NVIDIA_VISIBLE_DEVICES: flags.plugin.deviceListStrategy is
// unset (envvar is the default), "envvar", or a list holding it.
func usesEnvvarStrategy(config string) (bool, error) {
	var doc struct {
		Flags struct {
			Plugin struct {
				DeviceListStrategy any `json:"deviceListStrategy"`
			} `json:"plugin"`
		} `json:"flags"`
	}
	if err := yaml.Unmarshal([]byte(config), &doc); err != nil {
		return false, fmt.Errorf("gpulet config: %w", err)
	}
	switch s := doc.Flags.Plugin.DeviceListStrategy.(type) {
	case nil:
		return true, nil
	case string:
		return s == "envvar", nil
	case []any:
		for _, v := range s {
			if v == "envvar" {
				return true, nil
			}
		}
		return false, nil
	default:
		return false, fmt.Errorf("gpulet config: deviceListStrategy %v", s)
	}
}

// setAcceptEnvvar rewrites the runtime config's acceptEnvvarUnprivileged.
// gpulet-runtime reads the file at every create, so it is replaced with a
// rename: a reader sees the old file or the new one.
func (p Paths) setAcceptEnvvar(accept bool) error {
	path := p.RuntimeConfig()
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !acceptEnvvarLine.Match(data) {
		return fmt.Errorf("%s: no acceptEnvvarUnprivileged line", path)
	}
	data = acceptEnvvarLine.ReplaceAll(data, []byte(fmt.Sprintf("acceptEnvvarUnprivileged: %t", accept)))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// runtimeSettingFor sets the runtime config for a gpulet config about to
// be deployed. A config that is not YAML leaves it as it is: gpulet keeps
// its previous config then too.
func (n *Node) runtimeSettingFor(config string) error {
	envvar, err := usesEnvvarStrategy(config)
	if err != nil {
		return nil
	}
	return n.Cfg.Paths.setAcceptEnvvar(envvar)
}
