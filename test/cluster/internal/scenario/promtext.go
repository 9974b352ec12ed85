package scenario

// Just enough of the Prometheus text format for the outage scenarios: the
// samples of one metric, and a histogram's buckets summed over the label
// sets a filter keeps.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

type promSample struct {
	labels map[string]string
	value  float64
}

// promSamples returns the samples of metric `name` in text.
func promSamples(text, name string) []promSample {
	var out []promSample
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) || len(line) == len(name) {
			continue
		}
		rest := line[len(name):]
		labels := map[string]string{}
		switch rest[0] {
		case '{':
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels = parseLabels(rest[1:end])
			rest = rest[end+1:]
		case ' ':
		default:
			continue // another metric with this prefix
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out = append(out, promSample{labels, v})
	}
	return out
}

// parseLabels reads `a="x",b="y"` (values with \" \\ \n escapes).
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return out
		}
		key := strings.TrimSpace(strings.TrimPrefix(s[:eq], ","))
		var v strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if s[i] == 'n' {
					v.WriteByte('\n')
					continue
				}
			}
			v.WriteByte(s[i])
		}
		out[key] = v.String()
		s = strings.TrimPrefix(s[min(i+1, len(s)):], ",")
	}
	return out
}

// histo is a histogram: cumulative counts per upper bound, sum and count.
type histo struct {
	buckets map[float64]float64
	sum     float64
	count   float64
}

// readHisto sums the series of histogram `name` whose labels keep accepts.
func readHisto(text, name string, keep func(map[string]string) bool) histo {
	h := histo{buckets: map[float64]float64{}}
	for _, s := range promSamples(text, name+"_bucket") {
		if !keep(s.labels) {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			continue
		}
		h.buckets[le] += s.value
	}
	for _, s := range promSamples(text, name+"_sum") {
		if keep(s.labels) {
			h.sum += s.value
		}
	}
	for _, s := range promSamples(text, name+"_count") {
		if keep(s.labels) {
			h.count += s.value
		}
	}
	return h
}

// minus is what was observed between an earlier reading and h.
func (h histo) minus(earlier histo) histo {
	d := histo{buckets: map[float64]float64{}, sum: h.sum - earlier.sum, count: h.count - earlier.count}
	for le, v := range h.buckets {
		d.buckets[le] = v - earlier.buckets[le]
	}
	return d
}

// above is how many observations exceeded bound (a bucket's upper bound).
func (h histo) above(bound float64) float64 {
	return h.count - h.buckets[bound]
}

// longest describes the slowest observation: the smallest bucket bound
// all observations are within, with the count and mean.
func (h histo) longest() string {
	if h.count <= 0 {
		return "no call"
	}
	var les []float64
	for le := range h.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	bound := "?"
	for _, le := range les {
		if h.buckets[le] >= h.count {
			if math.IsInf(le, 1) && len(les) > 1 {
				bound = fmt.Sprintf("> %.3g s", les[len(les)-2])
			} else {
				bound = fmt.Sprintf("<= %.3g s", le)
			}
			break
		}
	}
	return fmt.Sprintf("%s (%d calls, mean %.2f s)", bound, int(h.count), h.sum/h.count)
}
