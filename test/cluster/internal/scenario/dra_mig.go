package scenario

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The DRA scenarios on MIG devices, on the simulator's a100-mig (see
// mig.go); ctest's cluster_dra_mig runs them (--dra --machine a100-mig).
func init() {
	register(Scenario{
		Name: "dra-mig", Machine: migMachine, DRA: true,
		Doc: "a claim of class mig.nvidia.com for a 1g.5gb device gets one; the container sees exactly that " +
			"MIG device (its GPU's node, its GI and CI capability nodes) from the claim's CDI spec; the claim's " +
			"status.devices gets its UUID, parent UUID and profile",
		Run: draMigScenario,
	})
	register(Scenario{
		Name: "dra-memory", Machine: migMachine, DRA: true,
		Doc: "CEL selectors on memory: MIG devices with at least 15Gi are the machine's 3g.20gb ones, one pod " +
			"each, the next pod stays Pending with the scheduler's reason; a GPU with at least 40Gi is GPU 3",
		Run: draMemoryScenario,
	})
}

const migClass = "mig.nvidia.com"

// draMigDevice finds the machine's MIG device with a UUID: its parent's
// UUID, its profile, and its GI and CI capability nodes (path -> minor).
func draMigDevice(t *T, uuid string) (parent, profile string, caps map[string]int) {
	minors := migMinors(t)
	for _, g := range t.N.Machine.GPUs {
		for _, m := range g.MigDevices {
			if m.UUID != uuid {
				continue
			}
			caps = map[string]int{}
			for _, c := range []string{
				fmt.Sprintf("gpu%d/gi%d/access", g.Minor, m.GI),
				fmt.Sprintf("gpu%d/gi%d/ci%d/access", g.Minor, m.GI, m.CI),
			} {
				minor, ok := minors[c]
				if !ok {
					t.Fatalf("mig-minors has no %s", c)
				}
				caps[c] = minor
			}
			return g.UUID, m.Profile, caps
		}
	}
	t.Fatalf("%s is no MIG device of the machine", uuid)
	return "", "", nil
}

// expectMigPod checks that a pod's claim holds one MIG device of one of
// the profiles in want, and that its container sees exactly that device.
func expectMigPod(t *T, podName string, want map[string]bool) {
	a := podClaim(t, podName)
	if len(a.devices) != 1 {
		t.Fatalf("%s: claim %s got %v, want one MIG device", podName, a.claim, a.devices)
	}
	uuid := sliceUUIDs(t)[a.devices[0]]
	parent, profile, caps := draMigDevice(t, uuid)
	if !want[profile] {
		t.Errorf("%s got %s (%s), a %s; want one of %v", podName, a.devices[0], uuid, profile, sorted(want))
	}
	expectDraContainer(t, podName, a, []string{parent}, caps)
}

func draMigScenario(t *T) {
	createTemplate(t, "small-mig", claimRequest{class: migClass, count: 1,
		selector: "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"})
	defer deleteTemplate(t, "small-mig")
	createAndWaitRunning(t, claimPod("small-mig", "small-mig", ""))
	defer deletePods(t, "small-mig")
	expectMigPod(t, "small-mig", map[string]bool{"1g.5gb": true})
	a := podClaim(t, "small-mig")
	expectPrepared(t, a)
	// The claim's status.devices names the MIG device and its placement.
	uuid := sliceUUIDs(t)[a.devices[0]]
	parent, profile, _ := draMigDevice(t, uuid)
	data := waitClaimDeviceStatus(t, a, a.devices[0])
	if data["uuid"] != uuid || data["parentUUID"] != parent || data["profile"] != profile {
		t.Errorf("claim %s's status.devices data of %s is %v, want uuid %s, parentUUID %s, profile %s",
			a.claim, a.devices[0], data, uuid, parent, profile)
	}
	if _, ok := data["placement"].(map[string]any); !ok {
		t.Errorf("claim %s's status.devices data of %s has no placement: %v", a.claim, a.devices[0], data)
	}
	deletePods(t, "small-mig")
	expectUnprepared(t, a)
}

// profileGiB is a MIG profile's memory in GB ("3g.20gb": 20).
func profileGiB(profile string) int {
	_, mem, _ := strings.Cut(profile, ".")
	g, _ := strconv.Atoi(strings.TrimSuffix(mem, "gb"))
	return g
}

func draMemoryScenario(t *T) {
	n := t.N
	big := map[string]bool{}
	count := 0
	for _, g := range n.Machine.GPUs {
		for _, m := range g.MigDevices {
			if profileGiB(m.Profile) >= 15 {
				big[m.Profile] = true
				count++
			}
		}
	}
	if count == 0 {
		t.Fatalf("machine %s has no MIG device of 15 GB or more", n.Cfg.Machine)
	}
	createTemplate(t, "big-mig", claimRequest{class: migClass, count: 1,
		selector: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('15Gi')) >= 0"})
	defer deleteTemplate(t, "big-mig")
	createTemplate(t, "big-gpu", claimRequest{class: "gpu.nvidia.com", count: 1,
		selector: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"})
	defer deleteTemplate(t, "big-gpu")

	var names []string
	for i := 0; i < count; i++ {
		names = append(names, fmt.Sprintf("big-mig-%d", i))
	}
	defer deletePods(t, append([]string{"big-mig-extra", "big-gpu"}, names...)...)
	for _, name := range names {
		createAndWaitRunning(t, claimPod(name, "big-mig", ""))
	}
	for _, name := range names {
		expectMigPod(t, name, big)
	}
	if _, err := n.Client.CoreV1().Pods(ns).Create(t.Ctx, claimPod("big-mig-extra", "big-mig", ""),
		metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod big-mig-extra: %v", err)
	}
	msg := waitUnschedulable(t, "big-mig-extra")
	if !strings.Contains(msg, "cannot allocate all claims") {
		t.Errorf("big-mig-extra is unschedulable with %q, want the DRA plugin's \"cannot allocate all claims\"", msg)
	}

	createAndWaitRunning(t, claimPod("big-gpu", "big-gpu", ""))
	a := podClaim(t, "big-gpu")
	if len(a.devices) != 1 {
		t.Fatalf("big-gpu's claim got %v, want one GPU", a.devices)
	}
	uuid := sliceUUIDs(t)[a.devices[0]]
	for _, g := range n.Machine.GPUs {
		if g.UUID == uuid && g.MemoryBytes < 40<<30 {
			t.Errorf("big-gpu got GPU %d of %d bytes, want at least 40Gi", g.Index, g.MemoryBytes)
		}
	}
	expectDraContainer(t, "big-gpu", a, []string{uuid}, nil)
}
