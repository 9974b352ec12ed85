package node

import (
	"strings"
	"testing"
)

func TestSetTOMLValuesReplacesOneLineKeepingItsIndent(t *testing.T) {
	in := "root = \"/var/lib/containerd\"\n[a]\n  conf_dir = \"/etc/cni/net.d\"\n  cni_conf_dir = \"\"\n"
	got, err := setTOMLValues(in, []tomlSetting{{"root", `"/s"`}, {"conf_dir", `"/c"`}})
	if err != nil {
		t.Fatal(err)
	}
	want := "root = \"/s\"\n[a]\n  conf_dir = \"/c\"\n  cni_conf_dir = \"\"\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSetTOMLValuesWantsExactlyOneLine(t *testing.T) {
	for _, in := range []string{"x = 1\n", "[a]\n  k = 1\n[b]\n  k = 2\n"} {
		if _, err := setTOMLValues(in, []tomlSetting{{"k", "3"}}); err == nil || !strings.Contains(err.Error(), "k") {
			t.Errorf("%q: got %v, want an error naming k", in, err)
		}
	}
}
