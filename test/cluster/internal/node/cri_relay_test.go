package node

import (
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func encode(t *testing.T, req *runtimeapi.CreateContainerRequest) []byte {
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A container's CDI devices are also written as the CDI annotation; the
// rest of the request is kept.
func TestRelayAnnotatesCDIDevices(t *testing.T) {
	in := &runtimeapi.CreateContainerRequest{PodSandboxId: "sandbox", Config: &runtimeapi.ContainerConfig{
		Annotations: map[string]string{"other": "x"},
		CDIDevices:  []*runtimeapi.CDIDevice{{Name: "k8s.gpu.nvidia.com/claim=u-gpu-0"}, {Name: "k8s.gpu.nvidia.com/claim=u-gpu-1"}},
	}}
	b, err := withCDIAnnotation(encode(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var out runtimeapi.CreateContainerRequest
	if err := proto.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	want := "k8s.gpu.nvidia.com/claim=u-gpu-0,k8s.gpu.nvidia.com/claim=u-gpu-1"
	if got := out.Config.Annotations[CDIAnnotation]; got != want {
		t.Errorf("annotation %q, want %q", got, want)
	}
	if out.PodSandboxId != "sandbox" || out.Config.Annotations["other"] != "x" || len(out.Config.CDIDevices) != 2 {
		t.Errorf("the request changed otherwise: %v", &out)
	}
}

// A container without CDI devices passes unchanged, byte for byte.
func TestRelayLeavesOtherContainersAlone(t *testing.T) {
	in := encode(t, &runtimeapi.CreateContainerRequest{PodSandboxId: "s", Config: &runtimeapi.ContainerConfig{}})
	out, err := withCDIAnnotation(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(in) {
		t.Errorf("request changed")
	}
}
