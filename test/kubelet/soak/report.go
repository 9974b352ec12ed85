package soak

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"gpulet.dev/test/kubelet/harness"
)

// The baseline rule. A gpulet life's baseline is its /proc sample at the
// second settled point of that life (after one round of chaos: gRPC's
// threads and buffers, NVML's state and the allocator's arenas have grown to
// their working size); its end is the sample at its last settled point. A
// life with fewer than three settled points (one cut short by a SIGKILL) is
// shown but not judged. At a settled point the kubelet holds the same
// connections and streams as at any other, so the figures must come back:
const (
	fdSlack        = 2        // connections the kubelet or gRPC may still be closing
	threadSlack    = 2        // gRPC executor threads not yet retired
	rssSlackKiB    = 8 * 1024 // allocator noise
	rssSlackFactor = 0.25     // ... or a quarter of the baseline, if more
)

// baselineVerdict judges one life; "" when it is within the rule.
func baselineVerdict(base, end procSample) string {
	var bad []string
	if end.FDs > base.FDs+fdSlack {
		bad = append(bad, fmt.Sprintf("fds %d -> %d (more than +%d)", base.FDs, end.FDs, fdSlack))
	}
	if end.Threads > base.Threads+threadSlack {
		bad = append(bad, fmt.Sprintf("threads %d -> %d (more than +%d)", base.Threads, end.Threads, threadSlack))
	}
	slack := max(int64(rssSlackKiB), int64(float64(base.RSSKiB)*rssSlackFactor))
	if end.RSSKiB > base.RSSKiB+slack {
		bad = append(bad, fmt.Sprintf("RSS %.1f -> %.1f MiB (more than +%.1f MiB)",
			float64(base.RSSKiB)/1024, float64(end.RSSKiB)/1024, float64(slack)/1024))
	}
	return strings.Join(bad, ", ")
}

// checkBaselines applies the rule to every life long enough to be judged.
func (r *machineRun) checkBaselines() error {
	for i, l := range r.gpulet.Lives() {
		if len(l.Settled) < 3 {
			continue
		}
		if bad := baselineVerdict(l.Settled[1], l.Settled[len(l.Settled)-1]); bad != "" {
			return violation("gpulet life %d (pid %d) did not return to its baseline: %s", i+1, l.Pid, bad)
		}
	}
	return nil
}

// report renders what happened on one machine; err is the run's failure.
func (r *machineRun) report(err error) string {
	var b strings.Builder
	verdict := "PASS"
	if err != nil {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "-- %s: %s after %v, %d rounds (%s)\n", r.machine.Name, verdict,
		r.elapsed().Round(time.Second), r.rounds, replayHint(r.opts.Seed, r.machine))
	s := r.stats
	if s == nil {
		return b.String()
	}
	stormMs := s.get("xid storm milliseconds")
	events := s.get("xid events (ignored)") + s.get("xid events (fatal)")
	rate := 0.0
	if stormMs > 0 {
		rate = float64(events) / (float64(stormMs) / 1000)
	}
	if d := r.driver; d != nil {
		fmt.Fprintf(&b, "faults delivered and answered (demanded: %d of each kind): %s\n", minFaults(r.slot), d.deliveredSummary())
		fmt.Fprintf(&b, "        %s; Xid events: %d application-error, %d fatal (%.0f events/s while storming)\n",
			d.decisions.String(), s.get("xid events (ignored)"), s.get("xid events (fatal)"), rate)
	}
	fmt.Fprintf(&b, "        %d NVML events dropped from full event queues (gpulet not reading them, e.g. backing off after failed waits)\n",
		s.get("NVML events dropped"))
	if n := s.get("kubelet panics"); n > 0 {
		fmt.Fprintf(&b, "        %d panics of the kubelet's own device manager (each restarted as a crashed kubelet is; see the note)\n", n)
	}
	fmt.Fprintf(&b, "pods: %d admitted, %d deleted, %d rejected, %d probe pods at settled points; %d direct Allocate calls answered\n",
		s.get("pods admitted"), s.get("pods deleted"), s.totalRejects(), s.get("probe pods"), s.get("direct calls answered"))
	fmt.Fprintf(&b, "  two-replica pods at settled points: %d refused under failRequestsGreaterThanOne, %d admitted without it, %d not tried (fewer than 2 free);\n"+
		"  %d allocations re-checked on gpulet\n",
		s.get("two-replica pods refused (failRequestsGreaterThanOne)"), s.get("two-replica pods admitted"),
		s.get("two-replica checks skipped (fewer than 2 free)"), s.get("allocations re-checked on gpulet"))
	if failed := s.withPrefix("direct calls failed: "); failed != "" {
		fmt.Fprintf(&b, "  direct calls failed: %s\n", failed)
	}
	for _, line := range s.topRejects(4) {
		fmt.Fprintf(&b, "  rejected %s\n", line)
	}
	mx, med, n := s.settleSummary()
	fmt.Fprintf(&b, "checks: %d continuous allocation checks; %d settled points, whole again after the last fault in %v median, %v at most (limit %v)\n",
		s.get("continuous checks"), n, med.Round(time.Millisecond), mx.Round(time.Millisecond), r.opts.SettleTimeout)
	for _, note := range s.notes {
		fmt.Fprintf(&b, "note: %s\n", note)
	}
	if r.gpulet != nil {
		b.WriteString(renderLives(r.gpulet.Lives()))
	}
	if err != nil {
		fmt.Fprintf(&b, "failure (%s): %v\n", replayHint(r.opts.Seed, r.machine), err)
		fmt.Fprintf(&b, "  faults of the last round:\n%s", r.faults.String())
		if r.gpulet != nil {
			fmt.Fprintf(&b, "  gpulet's last lines (storm noise and requests left out):\n%s", r.gpulet.watch.Notable(60))
			if r.simStatus != "" {
				fmt.Fprintf(&b, "  simulator status: %s\n", r.simStatus)
			}
		}
		if tail := harnessKubeletTail(); tail != "" {
			fmt.Fprintf(&b, "  kubelet log (last lines):\n%s", tail)
		}
	}
	return b.String()
}

// renderLives prints each gpulet life's curve (start and end of the
// per-second samples, and their peak) and its settled samples with the
// baseline verdict. Lives too short to judge, but the first and the last
// two, are folded into one line.
func renderLives(lives []life) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gpulet /proc (fds, threads, RSS); baseline = 2nd settled point of a life, end = its last:\n")
	var folded []life
	for i, l := range lives {
		if len(l.Settled) < 3 && i > 0 && i < len(lives)-2 {
			folded = append(folded, l)
			continue
		}
		if len(folded) > 0 {
			b.WriteString(foldLives(folded))
			folded = nil
		}
		renderLife(&b, i+1, l)
	}
	return b.String()
}

func renderLife(b *strings.Builder, n int, l life) {
	fmt.Fprintf(b, "  life %d, pid %d, from %.1fs:", n, l.Pid, l.Started.Seconds())
	if len(l.Curve) > 0 {
		first, last := l.Curve[0], l.Curve[len(l.Curve)-1]
		peak := peakOf(l.Curve)
		fmt.Fprintf(b, " curve start %.1fs %s; end %.1fs %s; peak fds %d, threads %d, RSS %.1f MiB\n",
			first.At.Seconds(), first, last.At.Seconds(), last, peak.FDs, peak.Threads, float64(peak.RSSKiB)/1024)
	} else {
		b.WriteString(" no per-second samples\n")
	}
	if len(l.Settled) == 0 {
		return
	}
	var fds, threads, rss []string
	for _, s := range thin(l.Settled, 12) {
		fds = append(fds, fmt.Sprint(s.FDs))
		threads = append(threads, fmt.Sprint(s.Threads))
		rss = append(rss, fmt.Sprintf("%.1f", float64(s.RSSKiB)/1024))
	}
	fmt.Fprintf(b, "    %d settled points: fds %s | threads %s | RSS MiB %s\n",
		len(l.Settled), strings.Join(fds, " "), strings.Join(threads, " "), strings.Join(rss, " "))
	if len(l.Settled) < 3 {
		b.WriteString("    not judged: fewer than 3 settled points\n")
		return
	}
	base, end := l.Settled[1], l.Settled[len(l.Settled)-1]
	verdict := "within the rule"
	if bad := baselineVerdict(base, end); bad != "" {
		verdict = "NOT within the rule: " + bad
	}
	fmt.Fprintf(b, "    baseline %.1fs %s -> end %.1fs %s: %s\n", base.At.Seconds(), base, end.At.Seconds(), end, verdict)
}

// foldLives summarises lives cut short by a SIGKILL.
func foldLives(lives []life) string {
	var curve, settled []procSample
	for _, l := range lives {
		curve = append(curve, l.Curve...)
		settled = append(settled, l.Settled...)
	}
	line := fmt.Sprintf("  %d lives from %.1fs to %.1fs, each killed before 3 settled points", len(lives),
		lives[0].Started.Seconds(), lives[len(lives)-1].Started.Seconds())
	if len(curve) > 0 {
		peak := peakOf(curve)
		line += fmt.Sprintf("; peak fds %d, threads %d, RSS %.1f MiB", peak.FDs, peak.Threads, float64(peak.RSSKiB)/1024)
	}
	if len(settled) > 0 {
		lo, hi := settled[0], settled[0]
		for _, s := range settled {
			lo.FDs, hi.FDs = min(lo.FDs, s.FDs), max(hi.FDs, s.FDs)
			lo.Threads, hi.Threads = min(lo.Threads, s.Threads), max(hi.Threads, s.Threads)
			lo.RSSKiB, hi.RSSKiB = min(lo.RSSKiB, s.RSSKiB), max(hi.RSSKiB, s.RSSKiB)
		}
		line += fmt.Sprintf("; at their %d settled points fds %d-%d, threads %d-%d, RSS %.1f-%.1f MiB", len(settled),
			lo.FDs, hi.FDs, lo.Threads, hi.Threads, float64(lo.RSSKiB)/1024, float64(hi.RSSKiB)/1024)
	}
	return line + "\n"
}

func peakOf(samples []procSample) procSample {
	var p procSample
	for _, s := range samples {
		p.FDs = max(p.FDs, s.FDs)
		p.Threads = max(p.Threads, s.Threads)
		p.RSSKiB = max(p.RSSKiB, s.RSSKiB)
	}
	return p
}

// thin keeps at most n samples, evenly spread, always the first and last.
func thin(s []procSample, n int) []procSample {
	if len(s) <= n {
		return s
	}
	idx := map[int]bool{}
	for i := 0; i < n; i++ {
		idx[i*(len(s)-1)/(n-1)] = true
	}
	keys := make([]int, 0, len(idx))
	for i := range idx {
		keys = append(keys, i)
	}
	sort.Ints(keys)
	out := make([]procSample, 0, len(keys))
	for _, i := range keys {
		out = append(out, s[i])
	}
	return out
}

// harnessKubeletTail returns the device manager's last log lines (klog is
// process-global; Run set up the buffer).
func harnessKubeletTail() string { return harness.KubeletLog(0, nil).Tail(25) }
