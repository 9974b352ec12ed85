package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodSpec = `cdiVersion: 0.5.0
kind: example.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - {path: /dev/example0, type: c, major: 195, minor: 0}
containerEdits:
  env: [EXAMPLE=1]
`

func writeSpec(t *testing.T, name, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestValidSpecIsInjected(t *testing.T) {
	dir := writeSpec(t, "example.yaml", goodSpec)
	var out, errOut bytes.Buffer
	if code := run([]string{"--spec-dir", dir, "--all", "--each"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var specs map[string]struct {
		Process struct{ Env []string }
		Linux   struct {
			Devices []struct {
				Path         string
				Major, Minor int64
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &specs); err != nil {
		t.Fatal(err)
	}
	got := specs["example.com/gpu=0"]
	if len(got.Linux.Devices) != 1 || got.Linux.Devices[0].Path != "/dev/example0" ||
		got.Linux.Devices[0].Major != 195 {
		t.Errorf("devices = %+v", got.Linux.Devices)
	}
	if !strings.Contains(strings.Join(got.Process.Env, " "), "EXAMPLE=1") {
		t.Errorf("env = %v", got.Process.Env)
	}
}

// The validator must be able to fail, or its passes on gpulet's specs mean
// nothing.
func TestInvalidSpecsFail(t *testing.T) {
	cases := map[string]string{
		"unknown field":   strings.Replace(goodSpec, "env:", "envs:", 1),
		"version too old": strings.Replace(goodSpec, "0.5.0", "0.4.0", 1),
		"empty edits":     "cdiVersion: 0.5.0\nkind: example.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits: {}\n",
		"bad kind":        strings.Replace(goodSpec, "example.com/gpu", "example.com", 1),
	}
	for name, text := range cases {
		dir := writeSpec(t, "example.yaml", text)
		var out, errOut bytes.Buffer
		if code := run([]string{"--spec-dir", dir, "--all"}, &out, &errOut); code != 1 {
			t.Errorf("%s: exit %d, want 1 (%s)", name, code, errOut.String())
		}
	}
}

func TestUnknownDeviceFails(t *testing.T) {
	dir := writeSpec(t, "example.yaml", goodSpec)
	var out, errOut bytes.Buffer
	if code := run([]string{"--spec-dir", dir, "example.com/gpu=7"}, &out, &errOut); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if code := run([]string{"--spec-dir", dir}, &out, &errOut); code != 2 {
		t.Errorf("no devices named: exit %d, want 2", code)
	}
}

// Two spec files in one dir. The same kind defining a device twice is the
// conflict the CDI registry reports (two specs under one vendor on a node);
// two kinds naming the same GPU, as the toolkit's nvidia.com/gpu spec and
// the device plugin's k8s.device-plugin.nvidia.com/gpu spec do, load
// together.
func TestTwoSpecsOnOneNode(t *testing.T) {
	pluginSpec := strings.Replace(goodSpec, "example.com/gpu", "k8s.device-plugin.example.com/gpu", 1)
	cases := []struct {
		name   string
		second string
		want   int
	}{
		{"same kind twice conflicts", goodSpec, 1},
		{"two kinds load together", pluginSpec, 0},
	}
	for _, c := range cases {
		dir := writeSpec(t, "a.yaml", goodSpec)
		if err := os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(c.second), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := run([]string{"--spec-dir", dir, "--all"}, &out, &errOut)
		if code != c.want {
			t.Errorf("%s: exit %d, want %d (%s)", c.name, code, c.want, errOut.String())
		}
		if c.want == 1 && !strings.Contains(errOut.String(), "conflict") {
			t.Errorf("%s: error does not name the conflict: %s", c.name, errOut.String())
		}
	}
}
