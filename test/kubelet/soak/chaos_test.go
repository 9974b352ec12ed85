package soak

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeGPUs are UUIDs in the simulator's form.
func fakeGPUs(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("GPU-%08x-0000-0000-0000-000000000000", i))
	}
	return out
}

// decide runs n steps of a driver of machine m for a slot, applying each
// decision to the driver's state as a delivered fault does, and returns the
// decisions.
func decide(m Machine, slot time.Duration, seed int64, n int) ([]decision, *driver) {
	r := &machineRun{machine: m, slot: slot, seed: seed, stats: newStats()}
	r.migUUIDs = mustInventory(m).migDevices()
	d := newDriver(r, seed+2)
	rng := rand.New(rand.NewSource(seed + 1))
	var out []decision
	for i := 0; i < n; i++ {
		dec := d.decide(rand.New(rand.NewSource(rng.Int63())))
		out = append(out, dec)
		switch dec.Kind {
		case faultLose:
			d.lost[dec.GPU] = 0
		case faultRestore:
			delete(d.lost, dec.GPU)
		case faultKill:
			clear(d.lost)
		case faultReload:
			r.fileVariant = dec.Variant
		}
		d.delivered[dec.Kind]++
	}
	return out, d
}

func mustInventory(m Machine) *inventory {
	inv, err := newInventory(m, fakeGPUs(m.GPUs))
	if err != nil {
		panic(err)
	}
	return inv
}

func TestOneSeedOneSequenceOfDecisions(t *testing.T) {
	for _, m := range Machines() {
		a, _ := decide(m, time.Minute, 42, 300)
		b, _ := decide(m, time.Minute, 42, 300)
		c, _ := decide(m, time.Minute, 43, 300)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: seed 42 gave two sequences", m.Name)
		}
		if fmt.Sprint(a) == fmt.Sprint(c) {
			t.Errorf("%s: seeds 42 and 43 gave the same sequence", m.Name)
		}
	}
}

// The demanded faults come early: for a one-minute run (one of each kind)
// within the first 40 steps, the SIGKILL within the first 10; for 15
// minutes (15 of each) within 400 steps.
func TestDemandedFaultsComeEarly(t *testing.T) {
	for _, tc := range []struct {
		slot  time.Duration
		steps int
	}{{time.Minute, 40}, {15 * time.Minute, 400}} {
		for seed := int64(1); seed <= 20; seed++ {
			for _, m := range Machines() {
				decs, d := decide(m, tc.slot, seed, tc.steps)
				if len(d.must) != 0 {
					t.Errorf("%s, %v, seed %d: demanded faults left after %d steps: %v", m.Name, tc.slot, seed, tc.steps, d.must)
				}
				if k := slices.IndexFunc(decs, func(x decision) bool { return x.Kind == faultKill }); k < 0 || k >= 10 {
					t.Errorf("%s, %v, seed %d: first SIGKILL at step %d", m.Name, tc.slot, seed, k)
				}
				if err := d.checkDemand(); err != nil {
					t.Errorf("%s, %v, seed %d: %v", m.Name, tc.slot, seed, err)
				}
			}
		}
	}
}

func TestCheckDemand(t *testing.T) {
	m := Machines()[0]
	for _, tc := range []struct {
		slot      time.Duration
		delivered int // of each kind
		skip      faultKind
		want      string
	}{
		{time.Minute, 0, -1, "at least 1 of each fault kind"},
		{time.Minute, 1, -1, ""},
		{time.Minute, 1, faultBadReload, "invalid reload 0"},
		{15 * time.Minute, 14, -1, "at least 15 of each"},
		{15 * time.Minute, 15, -1, ""},
		{20 * time.Second, 0, -1, "no fault"},
		{20 * time.Second, 1, faultKill, ""},
	} {
		d := newDriver(&machineRun{machine: m, slot: tc.slot}, 1)
		for k := range d.delivered {
			if faultKind(k) != tc.skip {
				d.delivered[k] = tc.delivered
			}
		}
		err := d.checkDemand()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v, %d each but %v: %v, want %q", tc.slot, tc.delivered, tc.skip, err, tc.want)
		}
	}
	if minFaults(90*time.Second) != 1 || minFaults(15*time.Minute) != 15 || minFaults(29*time.Second) != 0 {
		t.Error("minFaults does not follow the documented rule")
	}
}

func TestInventory(t *testing.T) {
	islands, mig := Machines()[0], Machines()[1]
	gpus := fakeGPUs(16)
	inv := mustInventory(islands)
	want := inv.expected[islands.Variants[1].Name]["nvidia.com/gpu"] // 2 replicas
	if len(want) != 32 || want[0] != gpus[0]+"::0" || want[1] != gpus[0]+"::1" {
		t.Errorf("2 replicas of 16 GPUs: %v", want)
	}
	got, err := inv.visible([]string{gpus[3] + "::4", gpus[3] + "::1", gpus[7] + "::0"})
	if err != nil || !slices.Equal(got, []string{gpus[3], gpus[7]}) {
		t.Errorf("visible = %v, %v", got, err)
	}
	if _, err := inv.visible([]string{gpus[3] + "::5"}); err == nil {
		t.Error("replica 5 exists in no variant (at most 5 replicas) and was accepted")
	}
	if _, err := inv.visible([]string{gpus[3]}); err == nil {
		t.Error("a whole GPU of a time-sliced resource was accepted")
	}
	if err := inv.checkAdvertised(islands.Variants[1].Name, "nvidia.com/gpu", want); err != nil {
		t.Error(err)
	}
	shifted := append(slices.Clone(want[1:]), gpus[0]+"::2")
	if err := inv.checkAdvertised(islands.Variants[1].Name, "nvidia.com/gpu", shifted); err == nil || !IsViolation(err) {
		t.Errorf("another replica set was accepted: %v", err)
	}
	minv := mustInventory(mig)
	if got := minv.expected[mig.Variants[0].Name]["nvidia.com/gpu"]; !slices.Equal(got, []string{fakeGPUs(4)[3]}) {
		t.Errorf("a100-mig nvidia.com/gpu = %v, want GPU 3", got)
	}
	if n := len(minv.migDevices()); n != 12 {
		t.Errorf("a100-mig: %d MIG devices, want 12", n)
	}
	if _, err := newInventory(islands, gpus[:15]); err == nil {
		t.Error("15 GPUs for islands-16 were accepted")
	}
}

// a100MIGLayout must be the simulator profile's.
func TestA100LayoutIsTheProfiles(t *testing.T) {
	data, err := os.ReadFile("../../../sim/profiles/a100-mig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`profile: (\S+?),[^}]*uuid: (MIG-[0-9a-f-]+)`)
	got := map[string][]string{}
	for _, m := range re.FindAllStringSubmatch(strings.Join(strings.Fields(string(data)), " "), -1) {
		got["nvidia.com/mig-"+m[1]] = append(got["nvidia.com/mig-"+m[1]], m[2])
	}
	for res, ids := range a100MIGLayout {
		if !slices.Equal(sortedCopy(got[res]), sortedCopy(ids)) {
			t.Errorf("%s: profile %v, soak %v", res, got[res], ids)
		}
	}
	if len(got) != len(a100MIGLayout) {
		t.Errorf("profile has %d MIG profiles, soak %d", len(got), len(a100MIGLayout))
	}
}

func TestReplicaLimitVerdict(t *testing.T) {
	documented := errors.New(`kubelet rejected pod p container main: invalid allocation request for "nvidia.com/gpu": ` + oneReplicaError)
	other := errors.New("requested number of devices unavailable")
	for _, tc := range []struct {
		on   bool
		err  error
		want string
	}{
		{true, documented, ""},
		{true, nil, "was admitted"},
		{true, other, "another error"},
		{false, nil, ""},
		{false, documented, "was refused"},
	} {
		got := replicaLimitVerdict(tc.on, tc.err)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("on=%t err=%v: %q, want %q", tc.on, tc.err, got, tc.want)
		}
	}
}
