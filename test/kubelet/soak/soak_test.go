package soak

import (
	"bufio"
	"errors"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"gpulet.dev/test/kubelet/harness"
)

func TestMachinesKeepResourcesAndSharing(t *testing.T) {
	for _, m := range Machines() {
		if err := m.Validate(); err != nil {
			t.Error(err)
		}
		if len(m.Variants) < 2 {
			t.Errorf("%s: reloads need at least two variants", m.Name)
		}
	}
	bad := Machines()[1]
	bad.Variants = append(bad.Variants, bad.Variants[0])
	bad.Variants[len(bad.Variants)-1].Shared = map[string]bool{}
	if err := bad.Validate(); err == nil {
		t.Error("a variant that stops sharing a resource was accepted")
	}
}

func held(name, resource string, exclusive bool, ids ...string) *heldPod {
	return &heldPod{Pod: harness.NewPod(name, resource, len(ids)), Resource: resource,
		IDs: ids, Visible: visibleOf(ids), Exclusive: exclusive}
}

func TestDisjoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods []*heldPod
		want string // substring of the violation, "" for none
	}{
		{"replicas of one GPU in two pods", []*heldPod{
			held("a", "nvidia.com/gpu", false, "GPU-1::0"),
			held("b", "nvidia.com/gpu", false, "GPU-1::1"),
		}, ""},
		{"one replica in two pods", []*heldPod{
			held("a", "nvidia.com/gpu", false, "GPU-1::0", "GPU-2::0"),
			held("b", "nvidia.com/gpu", false, "GPU-2::0"),
		}, "GPU-2::0 is allocated to two running pods"},
		{"same ID under two resources", []*heldPod{
			held("a", "nvidia.com/gpu", true, "GPU-1"),
			held("b", "nvidia.com/other", true, "GPU-1"),
		}, "GPU-1 (nvidia.com/"},
		{"an exclusive MIG device seen by a replica pod", []*heldPod{
			held("a", "nvidia.com/mig-3g.20gb", true, "MIG-7"),
			held("b", "nvidia.com/mig-1g.5gb", false, "MIG-7::1"),
		}, "not shared"},
		{"different MIG devices", []*heldPod{
			held("a", "nvidia.com/mig-3g.20gb", true, "MIG-7"),
			held("b", "nvidia.com/mig-1g.5gb", false, "MIG-8::1"),
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[types.UID]*heldPod{}
			for _, p := range tc.pods {
				m[p.Pod.UID] = p
			}
			err := disjoint(m)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected violation: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a violation containing %q", err, tc.want)
			case err != nil && !IsViolation(err):
				t.Errorf("%v is not an invariantError", err)
			}
		})
	}
}

func TestVisibleOf(t *testing.T) {
	got := visibleOf([]string{"GPU-b::3", "GPU-a::0", "GPU-b::1", "MIG-c"})
	if want := []string{"GPU-a", "GPU-b", "MIG-c"}; !slices.Equal(got, want) {
		t.Errorf("visibleOf = %v, want %v", got, want)
	}
	if got := splitVisible(" GPU-b,GPU-a,GPU-b "); !slices.Equal(got, []string{"GPU-a", "GPU-b"}) {
		t.Errorf("splitVisible = %v", got)
	}
}

func TestBaselineVerdict(t *testing.T) {
	base := procSample{FDs: 17, Threads: 14, RSSKiB: 16 * 1024}
	for _, tc := range []struct {
		name string
		end  procSample
		want string
	}{
		{"same", base, ""},
		{"within slack", procSample{FDs: 19, Threads: 16, RSSKiB: 24 * 1024}, ""},
		{"fd leak", procSample{FDs: 20, Threads: 14, RSSKiB: 16 * 1024}, "fds 17 -> 20"},
		{"thread leak", procSample{FDs: 17, Threads: 17, RSSKiB: 16 * 1024}, "threads 14 -> 17"},
		{"RSS growth", procSample{FDs: 17, Threads: 14, RSSKiB: 25 * 1024}, "RSS 16.0 -> 25.0 MiB"},
		{"fewer is fine", procSample{FDs: 10, Threads: 10, RSSKiB: 1024}, ""},
	} {
		got := baselineVerdict(base, tc.end)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: verdict %q, want %q", tc.name, got, tc.want)
		}
	}
	big := procSample{RSSKiB: 100 * 1024}
	if got := baselineVerdict(big, procSample{RSSKiB: 124 * 1024}); got != "" {
		t.Errorf("a quarter of a large baseline is allowed, got %q", got)
	}
}

// Lines as gpulet writes them (health_monitor.cc, daemon_apply.cc,
// device_plugin_service.cc): the soak waits on them.
func TestLogWatch(t *testing.T) {
	w := newLogWatch()
	lines := []string{
		"I1124 02:11:21.379389    4909 health_monitor.cc:157] probing unhealthy GPU 5: UNAVAILABLE: nvmlDeviceGetUUID(GPU 5): GPU is lost [NVML_ERROR_GPU_IS_LOST]",
		"I1124 02:11:21.379389    4909 health_monitor.cc:157] probing unhealthy GPU 6: INTERNAL: something else",
		"I1124 02:11:24.001325    4909 health_monitor.cc:427] registering GPU 12 for health events again: UNAVAILABLE: nvmlDeviceGetHandleByUUID(GPU-6): GPU is lost",
		"I1124 02:11:21.365971    4909 device_plugin_service.cc:59] ListAndWatch stream opened for nvidia.com/mig-1g.5gb (3 open)",
		"I1124 02:08:30.329245   31894 device_plugin_service.cc:79] ListAndWatch stream for nvidia.com/gpu ended: server stopping (4 open)",
		"I1124 02:11:23.490808    4909 daemon_apply.cc:81] configuration reloaded",
		"E1124 02:11:23.490808    4909 daemon_apply.cc:37] configuration not reloaded, keeping the previous one: bad",
		"W1124 02:11:23.490808    4909 daemon.cc:1] something worth keeping",
	}
	for _, l := range lines {
		// The plugin's log buffer hands lines over prefixed, one per write.
		if _, err := w.Write([]byte("plugin: " + l + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	if w.LostSeen(5) != 1 || w.LostSeen(6) != 0 || w.LostSeen(12) != 1 {
		t.Errorf("lost probes: GPU 5 %d, 6 %d, 12 %d; want 1, 0, 1", w.LostSeen(5), w.LostSeen(6), w.LostSeen(12))
	}
	if w.Streams("nvidia.com/mig-1g.5gb") != 3 || w.Streams("nvidia.com/gpu") != 4 {
		t.Errorf("streams: %d, %d; want 3, 4", w.Streams("nvidia.com/mig-1g.5gb"), w.Streams("nvidia.com/gpu"))
	}
	if ok, bad, last := w.Reloads(); ok != 1 || bad != 1 || !strings.Contains(last, "keeping the previous one: bad") {
		t.Errorf("reloads: %d ok, %d refused (%q)", ok, bad, last)
	}
	notable := w.Notable(10)
	if !strings.Contains(notable, "something worth keeping") || strings.Contains(notable, "probing") ||
		strings.Contains(notable, "ListAndWatch") {
		t.Errorf("notable lines:\n%s", notable)
	}
	// A line split over two writes counts once.
	_, _ = w.Write([]byte("plugin: I1 x.cc:1] configuration rel"))
	_, _ = w.Write([]byte("oaded\n"))
	if ok, _, _ := w.Reloads(); ok != 2 {
		t.Errorf("split line: %d reloads, want 2", ok)
	}
}

func TestRejectKind(t *testing.T) {
	a := rejectKind("kubelet rejected pod w1-17 container main requested number of devices unavailable for nvidia.com/gpu. Requested: 2, Available: 1")
	b := rejectKind("kubelet rejected pod w4-900 container main requested number of devices unavailable for nvidia.com/gpu. Requested: 3, Available: 0")
	if a != b {
		t.Errorf("same kind, two buckets:\n%s\n%s", a, b)
	}
	if got := rejectKind("unknown device GPU-0556f28e-2136::3"); got != "unknown device <id>" {
		t.Errorf("rejectKind = %q", got)
	}
}

func TestThin(t *testing.T) {
	var s []procSample
	for i := 0; i < 100; i++ {
		s = append(s, procSample{FDs: i})
	}
	got := thin(s, 12)
	if len(got) != 12 || got[0].FDs != 0 || got[11].FDs != 99 {
		t.Errorf("thin: %d samples, first %d, last %d", len(got), got[0].FDs, got[len(got)-1].FDs)
	}
}

func TestSimDownIsRecognised(t *testing.T) {
	_, err := simClient{socket: t.TempDir() + "/none.sock"}.do("status")
	if !errors.Is(err, errSimDown) {
		t.Errorf("no socket: %v, want errSimDown", err)
	}
}

// The simulator answers "ok", "ok <payload>", "ok\n<payload>" or "error ...".
func TestSimAnswers(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ answer, payload, err string }{
		{"ok\n", "", ""},
		{"ok 3\n", "3", ""},
		{"ok\n{\"events\":{\"dropped\":7}}\n", `{"events":{"dropped":7}}`, ""},
		{"error unknown gpu \"9\"\n", "", `refused "status": error unknown gpu "9"`},
	} {
		socket := dir + "/s.sock"
		l, err := net.Listen("unix", socket)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(c).ReadString('\n')
			_, _ = c.Write([]byte(tc.answer))
			c.Close()
		}()
		payload, err := simClient{socket: socket}.do("status")
		l.Close()
		if payload != tc.payload || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("answer %q: payload %q, error %v; want %q, %q", tc.answer, payload, err, tc.payload, tc.err)
		}
	}
}

func TestRenderLivesFoldsShortOnes(t *testing.T) {
	short := life{Pid: 2, Curve: []procSample{{FDs: 30, Threads: 28, RSSKiB: 17 * 1024}},
		Settled: []procSample{{FDs: 17, Threads: 14, RSSKiB: 16 * 1024}}}
	long := life{Pid: 9, Settled: []procSample{{FDs: 17}, {FDs: 17}, {FDs: 18}}}
	lives := []life{short, short, short, short, long, short}
	out := renderLives(lives)
	for _, want := range []string{"life 1, pid 2", "3 lives from", "peak fds 30", "life 5, pid 9", "within the rule", "life 6, pid 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "life ") != 3 {
		t.Errorf("want 3 lives shown in full:\n%s", out)
	}
}

// visibleOf (for the tests) is what NVIDIA_VISIBLE_DEVICES must list for these kubelet IDs:
// each ID without its replica suffix, once.
func visibleOf(ids []string) []string {
	set := map[string]bool{}
	for _, id := range ids {
		base, _, _ := strings.Cut(id, "::")
		set[base] = true
	}
	return slices.Sorted(maps.Keys(set))
}
