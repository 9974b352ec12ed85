package harness

import (
	"os"
	"strings"
	"testing"
)

func TestPinnedKubernetesMatchesGoMod(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(gomod), "k8s.io/kubernetes "+PinnedKubernetes+"\n") {
		t.Errorf("go.mod does not require k8s.io/kubernetes %s; update PinnedKubernetes", PinnedKubernetes)
	}
	staging := "v0." + strings.TrimPrefix(PinnedKubernetes, "v1.")
	if !strings.Contains(string(gomod), "k8s.io/api => k8s.io/api "+staging+"\n") {
		t.Errorf("go.mod does not replace k8s.io/api with %s", staging)
	}
}
