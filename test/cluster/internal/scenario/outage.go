package scenario

// The API-outage scenarios (api-outage-memory, api-outage-dra): while the
// churn (outage_churn.go) creates and deletes pods, kube-apiserver is
// stopped (SIGSTOP, then SIGCONT), killed and started again, and cut off
// in the fixture's network namespace (node/outage.go). After each outage,
// once the API server answers: every pod wanted before then reaches
// Running (or failed its admission with gpulet's error while the API
// server was away); no kubelet call to gpulet waited past its deadline
// (the kubelet's own histogram of the call); gpulet failed kubelet calls
// only during an outage and a margin after it; the target's checks (what
// gpulet publishes, its watches) hold. Figures: per outage, the kubelet's
// slowest call, the longest time from a pod wanted to Running, and pods
// Running per minute during and after the outage against a healthy phase
// of the same churn first.

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"gpulet.dev/test/cluster/internal/node"
)

// OutageLong makes the outage scenarios run the long series: every kind of
// outage for 1 s, 10 s, 30 s and 2 minutes (gpulet-cluster --outage-long,
// make soak). Without it, one short outage of each kind.
var OutageLong bool

type outageKind struct {
	name       string
	begin, end func(*node.Node) error
}

var outageKinds = []outageKind{
	{"SIGSTOP", (*node.Node).PauseAPIServer, (*node.Node).ResumeAPIServer},
	{"SIGKILL+restart", (*node.Node).KillAPIServer, (*node.Node).RestartAPIServer},
	{"network cut", (*node.Node).CutAPIServer, (*node.Node).RestoreAPIServer},
}

type outageStep struct {
	kind outageKind
	d    time.Duration
}

func outagePlan() []outageStep {
	if !OutageLong {
		return []outageStep{{outageKinds[0], 3 * time.Second}, {outageKinds[1], time.Second}, {outageKinds[2], 5 * time.Second}}
	}
	var out []outageStep
	for _, d := range []time.Duration{time.Second, 10 * time.Second, 30 * time.Second, 2 * time.Minute} {
		for _, k := range outageKinds {
			out = append(out, outageStep{k, d})
		}
	}
	return out
}

// Bounds that only end a failure: never waited out when things work.
const (
	outageBackLimit = 3 * time.Minute // the API server answers again
	outageRunLimit  = 5 * time.Minute // every pod wanted then runs
	// How long the rate is measured at least after the API server is back.
	outageAfter = 30 * time.Second
)

// outageTarget is what differs between the memory and the DRA scenario.
type outageTarget struct {
	name  string // the scenario's, prefixing its figures
	churn *churn
	// calls: the kubelet's histogram of its calls to gpulet.
	callName string
	calls    func(metrics string) histo
	// deadline: a call past it was not answered in time; 0 when the
	// histogram cannot show it (checked by lateCalls instead).
	deadline float64
	// lateCalls, when set, returns an error when the kubelet saw a call
	// end at its own deadline between two readings of its metrics that
	// gpulet did not answer itself (gpulet's log during the outage).
	lateCalls func(before, after, gpuletLog string, since time.Time) error
	// failedCall: gpulet's log lines of a kubelet call it failed.
	failedCall *regexp.Regexp
	// margin: how long after the API server is back a kubelet call may
	// still fail (it may have started in the outage).
	margin time.Duration
	// failureOK: may a churn pod end Failed with this reason?
	failureOK func(reason string) bool
	// before runs just before each outage, after just after the churn
	// caught up: the target's own checks.
	before func(t *T)
	after  func(t *T, label string)
}

type outageWindow struct{ start, back time.Time }

type outageRun struct {
	t       *T
	target  *outageTarget
	windows []outageWindow
	healthy float64 // pods Running per minute with a healthy API server
	// reported: failed pods already reported.
	reported map[string]bool
	since    time.Time // gpulet's earlier log lines are other scenarios'
}

// runOutages runs the healthy phase, then every outage of the plan, with
// the churn already started, and the final checks.
func runOutages(t *T, target *outageTarget) {
	o := &outageRun{t: t, target: target, reported: map[string]bool{}, since: time.Now()}
	defer func() {
		// On every way out: no rule left, no API server stopped or
		// killed, and the scenario's clean-up finds it answering.
		if err := t.N.EndOutages(); err != nil {
			t.Errorf("%v", err)
		}
		if err := t.N.WaitFor(t.Ctx, "the API server to answer", outageBackLimit, func(ctx context.Context) (bool, error) {
			return t.N.APIServerReady(ctx), nil
		}); err != nil {
			t.Errorf("%v", err)
		}
	}()
	o.healthyPhase()
	for _, s := range outagePlan() {
		o.one(s)
	}
	o.checkGpuletLog()
}

func (o *outageRun) healthyPhase() {
	t, c := o.t, o.target.churn
	err := t.N.WaitFor(t.Ctx, "the churn's first pod to run", outageRunLimit, func(context.Context) (bool, error) {
		return c.runningIn(time.Time{}, time.Now().Add(time.Hour)) > 0, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, t.N.Kubectl("describe", "pods", "-n", ns, "-l", outageLabel))
	}
	span := 30 * time.Second
	if OutageLong {
		span = 2 * time.Minute
	}
	m0 := o.kubeletMetrics()
	from := time.Now()
	o.wait(span)
	to := time.Now()
	calls := o.target.calls(o.kubeletMetrics()).minus(o.target.calls(m0))
	ran := c.runningIn(from, to)
	o.healthy = float64(ran) / to.Sub(from).Minutes()
	if calls.count == 0 && ran > 0 {
		// The histogram read is not the kubelet's: no call check would hold.
		t.Fatalf("%d pods ran in the healthy phase, the kubelet's histogram of %s counts no call", ran, o.target.callName)
	}
	p := o.target.name + ": healthy API server: "
	t.FigureText(p+"pods Running/min", fmt.Sprintf("%.1f", o.healthy))
	t.FigureText(p+"kubelet "+o.target.callName, calls.longest())
	t.Figure(p+"longest wanted -> Running", longestToRunning(c, from, to))
	o.checkFailures("the healthy phase")
	o.reportViolations("the healthy phase")
}

// waitFlowing waits until the churn runs at its pace again (it may have
// been paused for the checks after the last outage): as many pods ran
// since as it keeps on their way, so that the outage finds pods on theirs.
func (o *outageRun) waitFlowing(label string) {
	c, from := o.target.churn, time.Now()
	err := o.t.N.WaitFor(o.t.Ctx, "the churn to run pods again", outageRunLimit, func(context.Context) (bool, error) {
		return c.runningIn(from, time.Now().Add(time.Hour)) >= c.width, nil
	})
	if err != nil {
		o.t.Fatalf("%s: %v", label, err)
	}
}

// wait waits out a measured span (the outage itself, or the rate's window).
func (o *outageRun) wait(d time.Duration) {
	select {
	case <-time.After(d):
	case <-o.t.Ctx.Done():
		o.t.Fatalf("interrupted")
	}
}

func (o *outageRun) kubeletMetrics() string {
	text, err := o.t.N.KubeletMetrics(o.t.Ctx)
	if err != nil {
		o.t.Fatalf("the kubelet's metrics: %v", err)
	}
	return text
}

func (o *outageRun) one(s outageStep) {
	t, n, c, tg := o.t, o.t.N, o.target.churn, o.target
	label := fmt.Sprintf("%s: %s %s", tg.name, s.kind.name, s.d)
	if tg.before != nil {
		tg.before(t)
	}
	o.waitFlowing(label)
	m0 := o.kubeletMetrics()
	n.Cfg.Log("%s: begins", label)
	start := time.Now()
	if err := s.kind.begin(n); err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	o.wait(s.d)
	if err := s.kind.end(n); err != nil {
		t.Fatalf("%s: ending it: %v", label, err)
	}
	err := n.WaitFor(t.Ctx, "the API server to answer again", outageBackLimit, func(ctx context.Context) (bool, error) {
		return n.APIServerReady(ctx), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	back := time.Now()
	o.windows = append(o.windows, outageWindow{start, back})
	n.Cfg.Log("%s: the API server answers again after %.1f s", label, back.Sub(start).Seconds())
	if left := c.waitDone(t.Ctx, back, outageRunLimit); len(left) > 0 {
		var names []string
		for _, p := range left {
			names = append(names, p.name)
		}
		t.Fatalf("%s: %d pod(s) wanted before the API server was back are not Running %s after: %v\n%s", label,
			len(left), outageRunLimit, names, n.Kubectl("describe", "pods", "-n", ns, "-l", outageLabel))
	}
	recovered := time.Now()
	if until := back.Add(outageAfter); recovered.Before(until) {
		o.wait(time.Until(until))
	}
	end := time.Now()
	m1 := o.kubeletMetrics()
	o.checkCalls(label, m0, m1, start)
	rate := float64(c.runningIn(start, end)) / end.Sub(start).Minutes()
	t.Figure(label+": API server away", back.Sub(start))
	t.FigureText(label+": kubelet "+tg.callName, tg.calls(m1).minus(tg.calls(m0)).longest())
	t.Figure(label+": longest wanted -> Running, pods on their way in the outage", longestInFlight(c, start, back))
	t.Figure(label+": API back -> every pod wanted by then Running", recovered.Sub(back))
	t.FigureText(label+": pods Running/min during+after (healthy)", fmt.Sprintf("%.1f (%.1f) over %.0f s", rate, o.healthy, end.Sub(start).Seconds()))
	t.FigureText(label+": pods that failed admission", fmt.Sprint(failedIn(c, start, end)))
	o.checkFailures(label)
	o.reportViolations(label)
	if tg.after != nil {
		tg.after(t, label)
	}
}

// checkCalls: no kubelet call to gpulet waited past its deadline.
func (o *outageRun) checkCalls(label, m0, m1 string, since time.Time) {
	tg := o.target
	calls := tg.calls(m1).minus(tg.calls(m0))
	if tg.deadline > 0 {
		if late := calls.above(tg.deadline); late > 0 {
			o.t.Errorf("%s: %d kubelet %s call(s) took more than %g s, gpulet's deadline (kubelet histogram: %s)",
				label, int(late), tg.callName, tg.deadline, calls.longest())
		}
	}
	if tg.lateCalls != nil {
		log := o.gpuletLog()
		if err := tg.lateCalls(m0, m1, log, since); err != nil {
			o.t.Errorf("%s: %v", label, err)
		}
	}
}

// checkFailures: a churn pod that failed did so for a reason the target
// allows (an admission gpulet failed while the API server was away).
func (o *outageRun) checkFailures(label string) {
	for _, p := range o.target.churn.snapshot() {
		if !p.failed.IsZero() && !o.target.failureOK(p.reason) && !o.reported[p.name] {
			o.reported[p.name] = true
			o.t.Errorf("%s: pod %s %s", label, p.name, p.reason)
		}
	}
}

func (o *outageRun) reportViolations(when string) {
	for _, v := range o.target.churn.takeViolations() {
		o.t.Errorf("%s: %s", when, v)
	}
}

func (o *outageRun) gpuletLog() string {
	pod, err := o.t.N.GpuletPod(o.t.Ctx)
	if err != nil || pod == nil {
		o.t.Fatalf("gpulet's pod: %v", err)
	}
	log, err := o.t.N.GpuletLog(o.t.Ctx, pod.Name)
	if err != nil {
		o.t.Fatalf("gpulet's log: %v", err)
	}
	return log
}

// checkGpuletLog: every kubelet call gpulet failed, it failed while the
// API server was away or within the margin after.
func (o *outageRun) checkGpuletLog() {
	for _, line := range strings.Split(o.gpuletLog(), "\n") {
		if !o.target.failedCall.MatchString(line) {
			continue
		}
		at, ok := gpuletLogTime(line, time.Now())
		if !ok || at.Before(o.since) {
			continue
		}
		inside := false
		for _, w := range o.windows {
			if !at.Before(w.start) && !at.After(w.back.Add(o.target.margin)) {
				inside = true
			}
		}
		if !inside {
			o.t.Errorf("gpulet failed a kubelet call with no API-server outage in the %s before: %s", o.target.margin, line)
		}
	}
}

// gpuletLogTime reads the time of a gpulet log line ("E1128 23:30:38.123456
// ..."), in the year of now (UTC).
func gpuletLogTime(line string, now time.Time) (time.Time, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || len(f[0]) != 5 {
		return time.Time{}, false
	}
	at, err := time.Parse("0102 15:04:05.000000", f[0][1:]+" "+f[1])
	if err != nil {
		return time.Time{}, false
	}
	at = at.AddDate(now.UTC().Year(), 0, 0)
	if at.After(now.Add(24 * time.Hour)) { // a line of last December
		at = at.AddDate(-1, 0, 0)
	}
	return at, true
}

// longestToRunning is the longest time from wanted to Running of the pods
// wanted in [from, to) that ran.
func longestToRunning(c *churn, from, to time.Time) time.Duration {
	var longest time.Duration
	for _, p := range c.snapshot() {
		if !p.running.IsZero() && !p.wanted.Before(from) && p.wanted.Before(to) {
			longest = max(longest, p.running.Sub(p.wanted))
		}
	}
	return longest
}

// longestInFlight is the longest time from wanted to Running of the pods
// on their way during [start, back): wanted before back, Running after
// start.
func longestInFlight(c *churn, start, back time.Time) time.Duration {
	var longest time.Duration
	for _, p := range c.snapshot() {
		if !p.running.IsZero() && p.wanted.Before(back) && !p.running.Before(start) {
			longest = max(longest, p.running.Sub(p.wanted))
		}
	}
	return longest
}

func failedIn(c *churn, from, to time.Time) int {
	k := 0
	for _, p := range c.snapshot() {
		if !p.failed.IsZero() && !p.failed.Before(from) && p.failed.Before(to) {
			k++
		}
	}
	return k
}
