package scenario

import (
	"strings"
	"testing"
)

func names(ss []Scenario) string {
	var n []string
	for _, s := range ss {
		n = append(n, s.Name)
	}
	return strings.Join(n, " ")
}

// A scenario made for one machine runs only on a cluster of that machine.
func TestSelectLeavesOutScenariosOfOtherMachines(t *testing.T) {
	h100, err := Select(".", "dgx-h100", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(h100); strings.Contains(got, "mig-") || strings.Contains(got, "dra-") || !strings.Contains(got, "reload-xid") {
		t.Errorf("dgx-h100 runs %s", got)
	}
	mig, err := Select("^mig-", "a100-mig", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(mig); got != "mig-pod mig-reload" {
		t.Errorf("a100-mig runs %s", got)
	}
	if _, err := Select("^mig-", "dgx-h100", false); err == nil {
		t.Errorf("selecting only MIG scenarios on dgx-h100 is no error")
	}
}

// The DRA scenarios run only on a node running gpulet dra, and only they.
func TestSelectKeepsDraScenariosToDraNodes(t *testing.T) {
	dra, err := Select(".", "islands-16", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range dra {
		if !strings.HasPrefix(s.Name, "dra-") && !strings.HasSuffix(s.Name, "-dra") {
			t.Errorf("a gpulet dra node runs %s", s.Name)
		}
	}
	if _, err := Select("^gpu-pod$", "dgx-h100", true); err == nil {
		t.Errorf("selecting gpu-pod on a gpulet dra node is no error")
	}
}

// Every scenario has a place in the run order.
func TestEveryScenarioIsOrdered(t *testing.T) {
	for _, s := range all {
		if rank(s.Name) == len(order) {
			t.Errorf("scenario %s is not in order", s.Name)
		}
	}
}

// The API-outage scenarios run last on the clusters of ctest's
// cluster_memory_shares and cluster_dra (CMakeLists.txt's regexes).
func TestOutageScenariosRunLast(t *testing.T) {
	for _, c := range []struct {
		re, machine string
		dra         bool
		last        string
	}{
		{"^(memory-shares|tenant-attacks|api-outage-memory)$", "mixed-memory", false, "api-outage-memory"},
		{"^(dra-(nvlink|shared|extended-resource|unsatisfiable|xid)|api-outage-dra)$", "islands-16", true, "api-outage-dra"},
	} {
		got, err := Select(c.re, c.machine, c.dra)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < 2 || got[len(got)-1].Name != c.last {
			t.Errorf("%s on %s runs %s, want %s last", c.re, c.machine, names(got), c.last)
		}
	}
}
