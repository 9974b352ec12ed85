package scenario

import (
	"strings"
	"testing"
	"time"
)

const kubeletMetricsSample = `# HELP kubelet_device_plugin_alloc_duration_seconds [ALPHA] Duration
# TYPE kubelet_device_plugin_alloc_duration_seconds histogram
kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name="nvidia.com/gpu-memory",le="0.5"} 3
kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name="nvidia.com/gpu-memory",le="10"} 4
kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name="nvidia.com/gpu-memory",le="+Inf"} 5
kubelet_device_plugin_alloc_duration_seconds_sum{resource_name="nvidia.com/gpu-memory"} 21.5
kubelet_device_plugin_alloc_duration_seconds_count{resource_name="nvidia.com/gpu-memory"} 5
kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name="nvidia.com/gpu",le="+Inf"} 7
kubelet_device_plugin_alloc_duration_seconds_count{resource_name="nvidia.com/gpu"} 7
kubelet_device_plugin_alloc_duration_seconds_countless 9
gpulet_extender_nodes 2
`

func TestReadHistoKeepsTheSeriesAsked(t *testing.T) {
	h := readHisto(kubeletMetricsSample, "kubelet_device_plugin_alloc_duration_seconds", func(l map[string]string) bool {
		return l["resource_name"] == "nvidia.com/gpu-memory"
	})
	if h.count != 5 || h.sum != 21.5 || h.buckets[0.5] != 3 || h.above(10) != 1 {
		t.Fatalf("histogram %+v", h)
	}
	if got := h.longest(); !strings.HasPrefix(got, "> 10 s (5 calls") {
		t.Errorf("longest: %s", got)
	}
	earlier := histo{buckets: map[float64]float64{0.5: 2, 10: 4}, count: 4, sum: 20}
	if d := h.minus(earlier); d.count != 1 || d.above(10) != 1 || d.buckets[0.5] != 1 {
		t.Errorf("minus: %+v", d)
	}
	within := histo{buckets: map[float64]float64{0.5: 1, 10: 2}, count: 2, sum: 3}
	if got := within.longest(); !strings.HasPrefix(got, "<= 10 s (2 calls, mean 1.50 s)") {
		t.Errorf("longest: %s", got)
	}
	if s := promSamples(kubeletMetricsSample, "gpulet_extender_nodes"); len(s) != 1 || s[0].value != 2 {
		t.Errorf("gauge: %+v", s)
	}
}

func TestParseLabelsWithEscapes(t *testing.T) {
	l := parseLabels(`a="x,y",b="say \"hi\"",c="\\"`)
	if l["a"] != "x,y" || l["b"] != `say "hi"` || l["c"] != `\` {
		t.Errorf("labels %q", l)
	}
}

func TestGpuletLogTime(t *testing.T) {
	now := time.Date(2026, 11, 28, 23, 40, 0, 0, time.UTC)
	at, ok := gpuletLogTime("E1128 23:30:38.123456      7 device_plugin_service.cc:31] Allocate failed: x", now)
	if !ok || !at.Equal(time.Date(2026, 11, 28, 23, 30, 38, 123456000, time.UTC)) {
		t.Errorf("got %v %v", at, ok)
	}
	if at, ok := gpuletLogTime("W1231 23:59:59.000000 7 x.cc:1] late", time.Date(2027, 1, 1, 0, 0, 1, 0, time.UTC)); !ok || at.Year() != 2026 {
		t.Errorf("a line of last December: %v %v", at, ok)
	}
	if _, ok := gpuletLogTime("not a log line", now); ok {
		t.Errorf("a line without a time has one")
	}
	if !memoryFailedCall.MatchString("E1128 23:30:38.123456 7 device_plugin_service.cc:31] Allocate failed: node gpulet-node: ...") {
		t.Errorf("memoryFailedCall misses gpulet's line")
	}
}

func TestLongestRoundsTheBound(t *testing.T) {
	h := histo{buckets: map[float64]float64{0.23535468936502524: 1, 0.36106407876409946: 3}, count: 3, sum: 0.3}
	if got := h.longest(); !strings.HasPrefix(got, "<= 0.361 s (3 calls") {
		t.Errorf("longest: %s", got)
	}
}
