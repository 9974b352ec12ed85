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
	h100, err := Select(".", "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(h100); strings.Contains(got, "mig-") || !strings.Contains(got, "reload-xid") {
		t.Errorf("dgx-h100 runs %s", got)
	}
	mig, err := Select("^mig-", "a100-mig")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(mig); got != "mig-pod mig-reload" {
		t.Errorf("a100-mig runs %s", got)
	}
	if _, err := Select("^mig-", "dgx-h100"); err == nil {
		t.Errorf("selecting only MIG scenarios on dgx-h100 is no error")
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
