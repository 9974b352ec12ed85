package scenario

import (
	"fmt"
	"regexp"
	"strings"

	"gpulet.dev/test/kubelet/harness"
)

var vfioGroupNode = regexp.MustCompile(`-> /dev/vfio/[0-9]+ `)

// CheckVfioRunOptions is the CheckRunOptions of a VFIO passthrough resource
// whose devices are each alone in their IOMMU group: the container gets the
// VFIO container node /dev/vfio/vfio, one group node /dev/vfio/<group> per
// allocated device, and never a GPU node of the container world
// (/dev/nvidia*).
func CheckVfioRunOptions(ids []string, opts *harness.RunOptions) error {
	container, groups := false, 0
	for _, d := range opts.Devices {
		switch {
		case strings.Contains(d, "-> /dev/vfio/vfio "):
			container = true
		case vfioGroupNode.MatchString(d):
			groups++
		case strings.Contains(d, "-> /dev/nvidia"):
			return fmt.Errorf("a passthrough container gets a container GPU node: %s", d)
		}
	}
	if !container {
		return fmt.Errorf("no /dev/vfio/vfio among the devices")
	}
	if groups != len(ids) {
		return fmt.Errorf("%d IOMMU group nodes for %d devices %v", groups, len(ids), ids)
	}
	return nil
}
