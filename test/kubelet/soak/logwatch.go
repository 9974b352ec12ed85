package soak

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// logWatch reads gpulet's output line by line (it is the tee of the plugin
// process's log buffer) and counts the lines the driver waits for: a probe
// that found a GPU lost, and the outcome of each reload. It also keeps the
// last lines that are not Xid-storm noise, for failure reports. Safe for
// concurrent use.
type logWatch struct {
	mu        sync.Mutex
	lostSeen  map[int]int // GPU index -> probes that found it gone
	reloadOK  int
	reloadBad int
	lastBad   string
	streams   map[string]int // resource -> open ListAndWatch streams, as last logged
	notable   []string
	partial   string
}

const notableLines = 200

var (
	// health_monitor.cc, at -v=1: a probe or a new registration attempt of an
	// unhealthy GPU answered "gone" (absl Unavailable).
	lostProbe = regexp.MustCompile(`(?:probing unhealthy GPU|registering GPU) (\d+)\b.*UNAVAILABLE`)
	// Repeated-event lines a storm produces by the thousand.
	// device_plugin_service.cc: every stream opened or ended, with the count.
	streamLine = regexp.MustCompile(`ListAndWatch stream (?:opened for|for) (\S+)\b.*\((\d+) open\)`)
	// Repeated-event lines a storm produces by the thousand, and the
	// requests logged at -v=1.
	noise = regexp.MustCompile(`is already unhealthy|ignored: |probing unhealthy GPU|registering GPU \d+ for health events again|waiting for NVML events failed again|container_requests|ListAndWatch stream|rejected Allocate|rejected GetPreferredAllocation`)
)

func newLogWatch() *logWatch {
	return &logWatch{lostSeen: map[int]int{}, streams: map[string]int{}}
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	text := w.partial + string(p)
	lines := strings.Split(text, "\n")
	w.partial = lines[len(lines)-1]
	for _, line := range lines[:len(lines)-1] {
		w.line(strings.TrimPrefix(line, "plugin: "))
	}
	return len(p), nil
}

func (w *logWatch) line(line string) {
	if m := lostProbe.FindStringSubmatch(line); m != nil {
		gpu, _ := strconv.Atoi(m[1])
		w.lostSeen[gpu]++
	}
	if m := streamLine.FindStringSubmatch(line); m != nil {
		w.streams[m[1]], _ = strconv.Atoi(m[2])
	}
	switch {
	case strings.Contains(line, "configuration not reloaded"):
		w.reloadBad++
		w.lastBad = line
	case strings.Contains(line, "configuration reloaded"):
		w.reloadOK++
	}
	if !noise.MatchString(line) {
		w.notable = append(w.notable, line)
		if len(w.notable) > notableLines {
			w.notable = w.notable[len(w.notable)-notableLines:]
		}
	}
}

// LostSeen is how many probes have found GPU gpu gone so far.
func (w *logWatch) LostSeen(gpu int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lostSeen[gpu]
}

// Streams returns the open ListAndWatch streams of a resource, as last logged.
func (w *logWatch) Streams(resource string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.streams[resource]
}

// Reloads returns the counts of accepted and refused reloads and the last refusal.
func (w *logWatch) Reloads() (ok, bad int, lastBad string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reloadOK, w.reloadBad, w.lastBad
}

// Notable returns the last n lines that are not storm noise, indented.
func (w *logWatch) Notable(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := w.notable
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return ""
	}
	return "    " + strings.Join(lines, "\n    ") + "\n"
}
