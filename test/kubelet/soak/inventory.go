package soak

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gpulet.dev/test/kubelet/harness"
)

// inventory is the soak's own account of what gpulet must advertise, built
// from the simulator's GPU list and the machine's variants, never from what
// gpulet or the kubelet says: for every variant and resource the exact set
// of device IDs, and for every ID the device behind it (a replica
// "<uuid>::<n>" is GPU or MIG device <uuid>), which is what
// NVIDIA_VISIBLE_DEVICES must name. Read-only once built.
type inventory struct {
	expected   map[string]map[string][]string // variant name -> resource -> sorted IDs
	underlying map[string]string              // device ID (any variant) -> device UUID
	shared     map[string]bool                // device ID -> of a time-sliced resource
}

func newInventory(m Machine, gpus []string) (*inventory, error) {
	if len(gpus) != m.GPUs {
		return nil, fmt.Errorf("the simulator lists %d GPUs on %s, the soak expects %d", len(gpus), m.Profile, m.GPUs)
	}
	inv := &inventory{expected: map[string]map[string][]string{}, underlying: map[string]string{}, shared: map[string]bool{}}
	devices := m.Devices(gpus)
	for _, v := range m.Variants {
		per := map[string][]string{}
		for _, res := range m.Resources() {
			base := devices[res]
			if len(base) == 0 {
				return nil, fmt.Errorf("machine %s: no device backs %s", m.Name, res)
			}
			n, replicated := v.Replicas[res]
			var ids []string
			for _, dev := range base {
				if !replicated {
					ids = append(ids, dev)
					inv.underlying[dev] = dev
					continue
				}
				for k := 0; k < n; k++ {
					id := fmt.Sprintf("%s::%d", dev, k)
					ids = append(ids, id)
					inv.underlying[id] = dev
					inv.shared[id] = true
				}
			}
			slices.Sort(ids)
			if len(ids) != v.Counts[res] {
				return nil, fmt.Errorf("machine %s, %q: %d IDs for %s, the variant counts %d", m.Name, v.Name, len(ids), res, v.Counts[res])
			}
			per[res] = ids
		}
		inv.expected[v.Name] = per
	}
	return inv, nil
}

// visible is what NVIDIA_VISIBLE_DEVICES must list for these kubelet device
// IDs: the device behind each, once, sorted. An ID the inventory does not
// know (one gpulet never had to advertise) is an error.
func (inv *inventory) visible(ids []string) ([]string, error) {
	set := map[string]bool{}
	for _, id := range ids {
		dev, ok := inv.underlying[id]
		if !ok {
			return nil, fmt.Errorf("device ID %q is none the node's configurations advertise", id)
		}
		set[dev] = true
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// checkAdvertised compares the healthy IDs the kubelet sees for a resource
// with what the variant must advertise, ID for ID.
func (inv *inventory) checkAdvertised(variant, resource string, ids []string) error {
	want := inv.expected[variant][resource]
	if slices.Equal(sortedCopy(ids), want) {
		return nil
	}
	return violation("%s under %q: the kubelet sees other device IDs than the node's configuration advertises: extra %v, missing %v",
		resource, variant, diff(ids, want), diff(want, ids))
}

// simGPUs waits (up to limit) for the simulator in gpulet to answer and
// returns its GPUs' UUIDs by index.
func simGPUs(c simClient, limit time.Duration) ([]string, error) {
	var payload string
	err := harness.Wait(limit, "the simulator's control socket to answer", func() (bool, string, error) {
		p, err := c.do("status")
		if err != nil {
			return false, err.Error(), nil
		}
		payload = p
		return true, "", nil
	})
	if err != nil {
		return nil, err
	}
	var status struct {
		GPUs []struct {
			Index int    `json:"index"`
			UUID  string `json:"uuid"`
		} `json:"gpus"`
	}
	if err := json.Unmarshal([]byte(payload), &status); err != nil {
		return nil, fmt.Errorf("simulator status %q: %w", payload, err)
	}
	out := make([]string, len(status.GPUs))
	for i, g := range status.GPUs {
		if g.Index != i || !strings.HasPrefix(g.UUID, "GPU-") {
			return nil, fmt.Errorf("simulator status lists GPU %d (%q) at position %d", g.Index, g.UUID, i)
		}
		out[i] = g.UUID
	}
	return out, nil
}

// migDevices lists the MIG devices behind the resources, sorted: the
// targets of MIG-scoped Xids.
func (inv *inventory) migDevices() []string {
	set := map[string]bool{}
	for _, dev := range inv.underlying {
		if strings.HasPrefix(dev, "MIG-") {
			set[dev] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
