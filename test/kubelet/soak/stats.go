package soak

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// stats counts what happened during one machine's run. Safe for concurrent use.
type stats struct {
	mu      sync.Mutex
	counts  map[string]int
	rejects map[string]int // admission failures, by kind
	settles []time.Duration
	notes   []string
}

func newStats() *stats { return &stats{counts: map[string]int{}, rejects: map[string]int{}} }

func (s *stats) add(key string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[key] += n
}

func (s *stats) get(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[key]
}

func (s *stats) reject(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejects[rejectKind(err.Error())]++
}

func (s *stats) settled(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settles = append(s.settles, d)
}

func (s *stats) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

var (
	idPattern     = regexp.MustCompile(`(GPU|MIG)-[0-9a-f-]+(::\d+)?`)
	numberPattern = regexp.MustCompile(`\d+`)
	podPattern    = regexp.MustCompile(`pod [^ ]+ container [^ ]+`)
)

// rejectKind turns an admission error into a bucket: IDs, pod names and
// numbers replaced, cut short.
func rejectKind(msg string) string {
	msg = podPattern.ReplaceAllString(msg, "pod P container C")
	msg = idPattern.ReplaceAllString(msg, "<id>")
	msg = numberPattern.ReplaceAllString(msg, "N")
	if len(msg) > 150 {
		msg = msg[:150] + "…"
	}
	return msg
}

// topRejects returns the n most frequent rejection kinds.
func (s *stats) topRejects(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range s.rejects {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || (all[i].v == all[j].v && all[i].k < all[j].k) })
	var out []string
	for i, e := range all {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("%5d  %s", e.v, e.k))
	}
	return out
}

func (s *stats) totalRejects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := 0
	for _, v := range s.rejects {
		t += v
	}
	return t
}

// settleSummary gives the longest and the median time from the last fault to
// every healthy device being advertised again.
func (s *stats) settleSummary() (max, median time.Duration, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.settles) == 0 {
		return 0, 0, 0
	}
	d := append([]time.Duration(nil), s.settles...)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)-1], d[len(d)/2], len(d)
}

// faultLog keeps the faults of the current round with their times, for a
// failure report.
type faultLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *faultLog) add(at time.Duration, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%8.3fs  %s", at.Seconds(), fmt.Sprintf(format, args...)))
}

func (l *faultLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = nil
}

func (l *faultLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return "    (none)\n"
	}
	return "    " + strings.Join(l.lines, "\n    ") + "\n"
}

// withPrefix renders the counts whose key starts with prefix, as "rest N, ...".
func (s *stats) withPrefix(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, v := range s.counts {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, fmt.Sprintf("%s %d", rest, v))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
