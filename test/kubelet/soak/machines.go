package soak

import (
	"fmt"
	"sort"
	"strings"
)

// Machine is one simulated node the soak runs gpulet on, with the
// configurations its reloads switch between. Every variant advertises the
// same resources, and a resource is shared (time-sliced) in all of them or
// in none: reloads change replica counts, never whether a device is
// exclusive, so "no device in two running pods" keeps one meaning.
type Machine struct {
	Name     string // label in the report
	Profile  string // GPULET_SIM_MACHINE
	GPUs     int
	Variants []Variant
	// SeedOffset is added to the soak's seed for this machine, so a run of
	// one machine alone (--machine) makes the same decisions as in a run of both.
	SeedOffset int64
}

// Variant is one configuration file and what the kubelet must see with it
// once every GPU is healthy.
type Variant struct {
	Name   string
	YAML   string
	Counts map[string]int // resource -> devices
	Shared map[string]bool
	// OneReplica: failRequestsGreaterThanOne (a pod asking for 2 replicas is refused).
	OneReplica bool
}

// Resources lists the machine's resources, sorted.
func (m Machine) Resources() []string {
	var out []string
	for r := range m.Variants[0].Counts {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Validate checks the invariants the checkers rely on.
func (m Machine) Validate() error {
	want := m.Resources()
	for _, v := range m.Variants {
		var got []string
		for r := range v.Counts {
			got = append(got, r)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			return fmt.Errorf("machine %s: variant %s advertises %v, variant %s %v",
				m.Name, v.Name, got, m.Variants[0].Name, want)
		}
		for _, r := range want {
			if v.Shared[r] != m.Variants[0].Shared[r] {
				return fmt.Errorf("machine %s: %s is shared in one variant and not in another", m.Name, r)
			}
		}
	}
	return nil
}

const (
	islandsGPUs = 16
	// a100-mig: GPU 0 = 3g.20gb + 2g.10gb + 1g.5gb, GPU 1 = 7 x 1g.5gb,
	// GPU 2 = 2 x 3g.20gb, GPU 3 whole.
	a100MIG1g = 8
)

// Machines returns the two machines of the soak.
func Machines() []Machine {
	islands := Machine{Name: "islands-16 time-slicing", Profile: "islands-16", GPUs: islandsGPUs}
	for _, v := range []struct {
		replicas   int
		policy     string
		quiet      string
		oneReplica bool
	}{
		{4, "distributed", "1s", false},
		{2, "packed", "2s", false},
		{3, "distributed", "1s", true},
		{5, "packed", "0s", false},
	} {
		islands.Variants = append(islands.Variants, Variant{
			Name: fmt.Sprintf("%d replicas, %s, quiet %s%s", v.replicas, v.policy, v.quiet, oneReplicaNote(v.oneReplica)),
			YAML: fmt.Sprintf(`version: v1
flags:
  plugin:
    sharedDevicesAllocationPolicy: %s
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: %t
    resources:
    - name: nvidia.com/gpu
      replicas: %d
health:
  quietPeriod: %s
`, v.policy, v.oneReplica, v.replicas, v.quiet),
			Counts:     map[string]int{"nvidia.com/gpu": islandsGPUs * v.replicas},
			Shared:     map[string]bool{"nvidia.com/gpu": true},
			OneReplica: v.oneReplica,
		})
	}
	mig := Machine{Name: "a100-mig mixed", Profile: "a100-mig", GPUs: 4, SeedOffset: 1000}
	for _, v := range []struct {
		replicas int
		quiet    string
	}{{2, "1s"}, {3, "2s"}, {4, "0s"}} {
		mig.Variants = append(mig.Variants, Variant{
			Name: fmt.Sprintf("mixed, 1g.5gb x %d replicas, quiet %s", v.replicas, v.quiet),
			YAML: fmt.Sprintf(`version: v1
flags:
  migStrategy: mixed
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/mig-1g.5gb
      replicas: %d
health:
  quietPeriod: %s
`, v.replicas, v.quiet),
			Counts: map[string]int{
				"nvidia.com/gpu":         1,
				"nvidia.com/mig-1g.5gb":  a100MIG1g * v.replicas,
				"nvidia.com/mig-2g.10gb": 1,
				"nvidia.com/mig-3g.20gb": 3,
			},
			Shared: map[string]bool{"nvidia.com/mig-1g.5gb": true},
		})
	}
	return []Machine{islands, mig}
}

func oneReplicaNote(on bool) string {
	if on {
		return ", failRequestsGreaterThanOne"
	}
	return ""
}

// badConfig is a file gpulet must refuse at a reload (replicas below 2),
// keeping the configuration it serves.
const badConfig = `version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 1
`
