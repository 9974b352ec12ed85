package harness

import "runtime/debug"

// PinnedKubernetes is the k8s.io/kubernetes version in go.mod (a test keeps
// them in step); test binaries carry no module versions to read it from.
const PinnedKubernetes = "v1.36.3"

// KubernetesVersion is the version of k8s.io/kubernetes compiled in.
func KubernetesVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == "k8s.io/kubernetes" {
				return m.Version
			}
		}
	}
	return PinnedKubernetes
}
