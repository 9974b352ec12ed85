package chart

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// passthroughConfig is a config file serving GPUs on vfio-pci from the
// host paths the chart mounts (docs/passthrough.md).
const passthroughConfig = `
config:
  map:
    config.yaml: |-
      version: v1
      passthrough:
        devices: [vfio-pci]
        sysRoot: /host/sys
        devRoot: /host/dev
`

// expectMount checks a container's mount of a volume.
func expectMount(c *corev1.Container, volume, path string, readOnly bool) error {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			if m.MountPath != path || m.ReadOnly != readOnly {
				return fmt.Errorf("container %s mounts %s at %s (read-only %v), want %s (read-only %v)",
					c.Name, volume, m.MountPath, m.ReadOnly, path, readOnly)
			}
			return nil
		}
	}
	return fmt.Errorf("container %s does not mount volume %s", c.Name, volume)
}

// expectHostPath checks a hostPath volume.
func expectHostPath(r *Rendered, volume, path string, typ corev1.HostPathType) error {
	v := r.Volume(volume)
	if v == nil || v.HostPath == nil || v.HostPath.Path != path || v.HostPath.Type == nil || *v.HostPath.Type != typ {
		return fmt.Errorf("volume %s: %+v, want hostPath %s of type %s", volume, v, path, typ)
	}
	return nil
}

func passthroughCases() []Case {
	return []Case{
		{
			Name:   "passthrough",
			Values: passthroughConfig + "passthrough:\n  enabled: true\n",
			Expect: func(r *Rendered) error {
				c := r.Container()
				if n := len(r.DaemonSet.Spec.Template.Spec.InitContainers); n != 0 {
					return fmt.Errorf("%d init container(s) without passthrough.bind.gpus", n)
				}
				if r.Volume("host-dev-iommu") != nil || r.Volume("vfio-state") != nil {
					return fmt.Errorf("volumes host-dev-iommu or vfio-state without their values")
				}
				return all(expectHostPath(r, "host-sys", "/sys", corev1.HostPathDirectory),
					expectHostPath(r, "host-dev-vfio", "/dev/vfio", corev1.HostPathDirectoryOrCreate),
					expectMount(c, "host-sys", "/host/sys", true),
					expectMount(c, "host-dev-vfio", "/host/dev/vfio", true))
			},
		},
		{
			Name: "passthrough, iommufd, bound by an init container",
			Values: passthroughConfig + `
passthrough:
  enabled: true
  iommufd: true
  bind:
    gpus: [4, "0000:9d:00.0", "c3:00.0"]
`,
			Expect: func(r *Rendered) error {
				inits := r.DaemonSet.Spec.Template.Spec.InitContainers
				if len(inits) != 1 {
					return fmt.Errorf("%d init containers, want 1 (vfio-bind)", len(inits))
				}
				ic := &inits[0]
				cmd := strings.Join(append(append([]string{}, ic.Command...), ic.Args...), " ")
				want := "gpulet vfio bind --sys-root /host/sys --dev-root /host/dev --state-dir /var/lib/gpulet/vfio 4 0000:9d:00.0 c3:00.0"
				if cmd != want {
					return fmt.Errorf("init container runs %q, want %q", cmd, want)
				}
				if sc := ic.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
					return fmt.Errorf("init container not privileged: %+v", sc)
				}
				return all(expectMount(ic, "host-sys", "/host/sys", false),
					expectMount(ic, "host-dev-vfio", "/host/dev/vfio", false),
					expectMount(ic, "vfio-state", "/var/lib/gpulet/vfio", false),
					expectHostPath(r, "vfio-state", "/var/lib/gpulet/vfio", corev1.HostPathDirectoryOrCreate),
					expectHostPath(r, "host-dev-iommu", "/dev/iommu", corev1.HostPathCharDev),
					expectMount(r.Container(), "host-dev-iommu", "/host/dev/iommu", true),
					expectMount(r.Container(), "host-sys", "/host/sys", true))
			},
		},
		{
			Name: "passthrough, bound from the config file (and a listed GPU)",
			Values: passthroughConfig + `
passthrough:
  enabled: true
  bind:
    fromConfig: true
    gpus: ["0000:9d:00.0"]
`,
			Expect: func(r *Rendered) error {
				inits := r.DaemonSet.Spec.Template.Spec.InitContainers
				if len(inits) != 1 {
					return fmt.Errorf("%d init containers, want 1 (vfio-bind)", len(inits))
				}
				ic := &inits[0]
				cmd := strings.Join(append(append([]string{}, ic.Command...), ic.Args...), " ")
				want := "gpulet vfio bind --sys-root /host/sys --dev-root /host/dev --state-dir /var/lib/gpulet/vfio --config /etc/gpulet/config.yaml 0000:9d:00.0"
				if cmd != want {
					return fmt.Errorf("init container runs %q, want %q", cmd, want)
				}
				// The same ConfigMap volume as gpulet's own container.
				return all(expectMount(ic, "config", "/etc/gpulet", true),
					expectMount(r.Container(), "config", "/etc/gpulet", true),
					expectMount(ic, "host-sys", "/host/sys", false),
					expectHostPath(r, "vfio-state", "/var/lib/gpulet/vfio", corev1.HostPathDirectoryOrCreate))
			},
		},
		{
			Name:   "passthrough, bound from the config file only",
			Values: passthroughConfig + "passthrough:\n  enabled: true\n  bind:\n    fromConfig: true\n",
			Expect: func(r *Rendered) error {
				inits := r.DaemonSet.Spec.Template.Spec.InitContainers
				if len(inits) != 1 {
					return fmt.Errorf("%d init containers, want 1 (vfio-bind)", len(inits))
				}
				args := strings.Join(inits[0].Args, " ")
				if args != "--config /etc/gpulet/config.yaml" {
					return fmt.Errorf("init container arguments %q, want only --config", args)
				}
				return nil
			},
		},
	}
}
