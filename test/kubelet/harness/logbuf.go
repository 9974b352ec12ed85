// Package harness runs the kubelet's own device manager
// (k8s.io/kubernetes/pkg/kubelet/cm/devicemanager) against a device plugin
// process, so a plugin can be checked for protocol conformance without a
// kubelet. It must run inside the private mount namespace set up by
// internal/mountns, because the device manager's directory is fixed.
//
// The types here are not safe for concurrent use unless stated otherwise;
// scenarios drive them from one goroutine.
package harness

import (
	"bytes"
	"flag"
	"io"
	"strconv"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// LogBuffer keeps the last lines written to it and optionally copies them to
// another writer. Safe for concurrent use.
type LogBuffer struct {
	mu      sync.Mutex
	max     int
	lines   []string
	partial []byte
	tee     io.Writer
	prefix  string
}

// NewLogBuffer keeps up to max lines; tee (may be nil) gets every line, with prefix.
func NewLogBuffer(max int, tee io.Writer, prefix string) *LogBuffer {
	return &LogBuffer{max: max, tee: tee, prefix: prefix}
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			break
		}
		line := string(b.partial[:i])
		b.partial = b.partial[i+1:]
		b.lines = append(b.lines, line)
		if len(b.lines) > b.max {
			b.lines = b.lines[len(b.lines)-b.max:]
		}
		if b.tee != nil {
			_, _ = io.WriteString(b.tee, b.prefix+line+"\n")
		}
	}
	return len(p), nil
}

// Tail returns the last n lines, indented, or "" when there are none.
func (b *LogBuffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := b.lines
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return ""
	}
	return "    " + strings.Join(lines, "\n    ") + "\n"
}

var (
	klogOnce sync.Once
	klogBuf  *LogBuffer
)

// KubeletLog routes the device manager's klog output into a buffer (the first
// call decides verbosity and tee; klog is process-global). tee may be nil.
func KubeletLog(verbosity int, tee io.Writer) *LogBuffer {
	klogOnce.Do(func() {
		klogBuf = NewLogBuffer(200, tee, "kubelet: ")
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		_ = fs.Set("v", strconv.Itoa(verbosity))
		// klog copies each message to the writers of its own and every lower
		// severity; keep only the INFO writer so every line appears once.
		klog.SetOutputBySeverity("INFO", klogBuf)
		for _, sev := range []string{"WARNING", "ERROR", "FATAL"} {
			klog.SetOutputBySeverity(sev, io.Discard)
		}
	})
	return klogBuf
}

// Reset forgets the kept lines (the tee is unaffected).
func (b *LogBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines, b.partial = nil, nil
}
