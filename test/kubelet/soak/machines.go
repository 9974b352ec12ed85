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
	// Devices says which devices of the node back each resource, given the
	// GPU UUIDs by index as the simulator reports them (its `status`), not
	// as gpulet does: the soak's own idea of what gpulet must advertise.
	Devices func(gpus []string) map[string][]string
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
	// Replicas of each time-sliced resource: device d is advertised as
	// d::0 .. d::<n-1>.
	Replicas map[string]int
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
	islands := Machine{Name: "islands-16 time-slicing", Profile: "islands-16", GPUs: islandsGPUs,
		Devices: func(gpus []string) map[string][]string { return map[string][]string{"nvidia.com/gpu": gpus} }}
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
			Replicas:   map[string]int{"nvidia.com/gpu": v.replicas},
		})
	}
	mig := Machine{Name: "a100-mig mixed", Profile: "a100-mig", GPUs: 4, SeedOffset: 1000, Devices: a100MIGDevices}
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
			Shared:   map[string]bool{"nvidia.com/mig-1g.5gb": true},
			Replicas: map[string]int{"nvidia.com/mig-1g.5gb": v.replicas},
		})
	}
	return []Machine{islands, mig}
}

// a100MIGLayout is sim/profiles/a100-mig.yaml's MIG devices by profile (a
// test compares it with the file); the simulator's status lists GPUs only.
var a100MIGLayout = map[string][]string{
	"nvidia.com/mig-1g.5gb": {
		"MIG-aa13c10a-96bf-5c00-b87b-bcf11c77bb7d", // GPU 0
		"MIG-55336152-84fd-5ff7-9c52-394a8d8450e5", // GPU 1 x 7
		"MIG-18c9dd1a-ba9e-5a60-9a3c-798e6dc65d58",
		"MIG-2ff93ea5-dc64-52f6-9c81-7d2a4c8e4117",
		"MIG-813b28cb-b1d9-5586-9fa8-808d5cdc898d",
		"MIG-20e1ff67-8eb8-5883-b65b-e0b51ba2c24d",
		"MIG-ea19161f-0d62-5a5d-8589-d9eb7caf6616",
		"MIG-c78f0674-4e19-5be4-8b73-6da6b7a609f9",
	},
	"nvidia.com/mig-2g.10gb": {"MIG-4dfe8ed0-b9b4-559c-b70e-c4d0dd21e338"},
	"nvidia.com/mig-3g.20gb": {
		"MIG-ec8cb5f9-6cc3-5bb2-bdeb-b84397098347", // GPU 0
		"MIG-871f5025-a38b-515f-a0d4-00c438a89878", // GPU 2 x 2
		"MIG-078a80e7-9d31-54e6-afab-5fd57fd735bd",
	},
}

// a100MIGDevices: GPU 3 (MIG disabled) is nvidia.com/gpu, the MIG devices
// of GPUs 0-2 their profiles' resources.
func a100MIGDevices(gpus []string) map[string][]string {
	out := map[string][]string{}
	if len(gpus) > 3 {
		out["nvidia.com/gpu"] = []string{gpus[3]}
	}
	for res, ids := range a100MIGLayout {
		out[res] = ids
	}
	return out
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
