package soak

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The faults the driver picks from, with their weights.
type faultKind int

const (
	faultXidStorm faultKind = iota
	faultLose
	faultRestore
	faultWaitError
	faultKubeletRestart
	faultReload
	faultBadReload
	faultKill
	numFaultKinds
)

var faultNames = [numFaultKinds]string{"Xid storm", "GPU lost", "GPU restored", "event-wait error",
	"kubelet restart", "reload", "invalid reload", "SIGKILL"}

func (k faultKind) String() string {
	if k < 0 || k >= numFaultKinds {
		return "none"
	}
	return faultNames[k]
}

var faultWeights = [numFaultKinds]int{
	faultXidStorm:       6,
	faultLose:           4,
	faultRestore:        6,
	faultWaitError:      4,
	faultKubeletRestart: 2,
	faultReload:         4,
	faultBadReload:      1,
	faultKill:           2,
}

// Xids a storm sends. Application errors gpulet ignores by default, and
// fatal ones that recover after the quiet period alone; Xids that need a
// GPU reset come only from `lose` (Xid 79), which the driver always follows
// by a restore once gpulet has seen the GPU gone, so every GPU can recover.
var (
	ignoredXids = []int{13, 31, 43, 45, 68, 109}
	fatalXids   = []int{32, 38, 61, 62, 69}
)

const (
	stormEvents = 1000
	stormRate   = 1000 // events per second
	maxLost     = 2
)

// minFaults is the chaos a node's run of length slot must deliver, per
// fault kind: one per full minute of the run, at least one from 30 s on.
// Below 30 s no kind is demanded, only one fault of any kind.
func minFaults(slot time.Duration) int {
	if slot < 30*time.Second {
		return 0
	}
	return max(1, int(slot/time.Minute))
}

// driver issues the faults of the chaos phases. It runs on one goroutine.
// lost is the GPUs it made lose, with gpulet's count of "probed lost" lines
// for that GPU when it did; must is the demanded faults not issued yet;
// delivered counts the faults that were delivered and answered.
type driver struct {
	r         *machineRun
	lost      map[int]int
	must      []faultKind
	delivered [numFaultKinds]int
	decisions decisionLog
}

// newDriver plans the demanded faults: minFaults of each kind, the SIGKILLs
// first (they are allowed in the first half of the run only), the others
// in an order drawn from the seed.
func newDriver(r *machineRun, seed int64) *driver {
	d := &driver{r: r, lost: map[int]int{}}
	n := minFaults(r.slot)
	var rest []faultKind
	for k := faultKind(0); k < numFaultKinds; k++ {
		for i := 0; i < n; i++ {
			if k == faultKill {
				d.must = append(d.must, k)
			} else {
				rest = append(rest, k)
			}
		}
	}
	rng := rand.New(rand.NewSource(seed))
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	d.must = append(d.must, rest...)
	return d
}

// decision is what one step does. It is drawn from the step's generator and
// the driver's own state (GPUs lost, the file's variant, the faults still
// demanded), never from the clock or from what gpulet logged, so one seed
// gives one sequence of decisions. The clock only gates SIGKILLs (first half
// of the run) and ends the run.
type decision struct {
	Kind    faultKind
	Targets []string // storm
	Xid     int
	Fatal   bool
	GPU     int // lose, restore
	Code    int // wait-error
	Count   int
	Variant int  // reload
	Await   bool // reload: wait for the outcome at once
}

func (d decision) String() string {
	switch d.Kind {
	case faultXidStorm:
		return fmt.Sprintf("storm xid %d on %s", d.Xid, strings.Join(d.Targets, ","))
	case faultLose:
		return fmt.Sprintf("lose %d", d.GPU)
	case faultRestore:
		return fmt.Sprintf("restore %d", d.GPU)
	case faultWaitError:
		return fmt.Sprintf("wait-error %d %d", d.Code, d.Count)
	case faultReload:
		return fmt.Sprintf("reload to variant %d (await %t)", d.Variant, d.Await)
	}
	return d.Kind.String()
}

// decide draws one step's decision. Half the time a demanded fault comes
// first (the first one the state allows), else a fault by weight.
func (d *driver) decide(rng *rand.Rand) decision {
	dec := decision{Kind: d.pick(rng)}
	switch dec.Kind {
	case faultXidStorm:
		dec.Targets = make([]string, 1+rng.Intn(3))
		for i := range dec.Targets {
			dec.Targets[i] = d.target(rng)
		}
		xids := ignoredXids
		if dec.Fatal = rng.Intn(3) == 0; dec.Fatal {
			xids = fatalXids
		}
		dec.Xid = xids[rng.Intn(len(xids))]
	case faultLose:
		var candidates []int
		for i := 0; i < d.r.machine.GPUs; i++ {
			if _, lost := d.lost[i]; !lost {
				candidates = append(candidates, i)
			}
		}
		dec.GPU = candidates[rng.Intn(len(candidates))]
	case faultRestore:
		lost := slices.Sorted(maps.Keys(d.lost))
		dec.GPU = lost[rng.Intn(len(lost))]
	case faultWaitError:
		dec.Code = []int{999, 15}[rng.Intn(2)]
		dec.Count = 1 + rng.Intn(5)
	case faultReload:
		dec.Variant = rng.Intn(len(d.r.machine.Variants) - 1)
		if dec.Variant >= d.r.fileVariant {
			dec.Variant++
		}
		dec.Await = rng.Intn(2) == 0
	}
	return dec
}

func (d *driver) pick(rng *rand.Rand) faultKind {
	if len(d.must) > 0 && rng.Intn(2) == 0 {
		for i, k := range d.must {
			if d.allowed(k) {
				d.must = slices.Delete(d.must, i, i+1)
				return k
			}
		}
	}
	total := 0
	for k, w := range faultWeights {
		if d.allowed(faultKind(k)) {
			total += w
		}
	}
	x := rng.Intn(total)
	for k, w := range faultWeights {
		if !d.allowed(faultKind(k)) {
			continue
		}
		if x < w {
			return faultKind(k)
		}
		x -= w
	}
	panic("unreachable: weights exhausted")
}

// allowed depends on the driver's state only.
func (d *driver) allowed(kind faultKind) bool {
	switch kind {
	case faultLose:
		return len(d.lost) < maxLost
	case faultRestore:
		return len(d.lost) > 0
	}
	return true
}

// target draws a GPU index or, on a MIG machine, a MIG device UUID.
func (d *driver) target(rng *rand.Rand) string {
	if mig := d.r.migUUIDs; len(mig) > 0 && rng.Intn(2) == 0 {
		return mig[rng.Intn(len(mig))]
	}
	return strconv.Itoa(rng.Intn(d.r.machine.GPUs))
}

// step decides and issues one fault. The error is a broken invariant or a
// harness failure; a fault that was not delivered and answered is one.
func (d *driver) step(round, n int, seed int64) error {
	dec := d.decide(rand.New(rand.NewSource(seed)))
	if dec.Kind == faultKill && !d.r.killsAllowed() {
		d.decisions.add(d.r, round, n, "SIGKILL not issued (second half of the run)")
		return nil
	}
	d.decisions.add(d.r, round, n, dec.String())
	if err := d.execute(dec); err != nil {
		return err
	}
	return nil
}

func (d *driver) execute(dec decision) error {
	switch dec.Kind {
	case faultXidStorm:
		return d.xidStorm(dec)
	case faultLose:
		return d.lose(dec.GPU)
	case faultRestore:
		return d.restore(dec.GPU, d.r.opts.SettleTimeout)
	case faultWaitError:
		return d.sim(faultWaitError, fmt.Sprintf("wait-error %d %d", dec.Code, dec.Count))
	case faultKubeletRestart:
		if err := d.r.node.restartKubelet(); err != nil {
			return err
		}
		d.done(faultKubeletRestart, "kubelet restart")
		return nil
	case faultReload:
		return d.reload(dec)
	case faultBadReload:
		return d.badReload()
	case faultKill:
		return d.kill()
	}
	return nil
}

// done counts a fault delivered and answered, and marks the time (a
// reload's time is its SIGHUP's, marked by applyFile or reload).
func (d *driver) done(kind faultKind, format string, args ...any) {
	d.delivered[kind]++
	if kind != faultReload {
		d.r.markFault()
	}
	d.r.log(format, args...)
}

// sim sends one command; the simulator must answer it "ok".
func (d *driver) sim(kind faultKind, line string) error {
	if _, err := d.r.gpulet.sim.do(line); err != nil {
		return violation("the simulator did not take %q: %v", line, err)
	}
	d.done(kind, "%s", line)
	return nil
}

// xidStorm sends stormEvents Xids at up to stormRate per second to the
// targets; every one must be answered.
func (d *driver) xidStorm(dec decision) error {
	start := time.Now()
	for sent := 0; sent < stormEvents; sent++ {
		line := fmt.Sprintf("xid %s %d", dec.Targets[sent%len(dec.Targets)], dec.Xid)
		if _, err := d.r.gpulet.sim.do(line); err != nil {
			return violation("the simulator did not take %q (event %d of a storm): %v", line, sent+1, err)
		}
		if ahead := time.Duration(sent+1)*time.Second/stormRate - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	took := time.Since(start)
	class := "ignored"
	if dec.Fatal {
		class = "fatal"
	}
	d.r.stats.add("xid events ("+class+")", stormEvents)
	d.r.stats.add("xid storm milliseconds", int(took.Milliseconds()))
	d.done(faultXidStorm, "xid storm: %d x Xid %d (%s) on %v in %v", stormEvents, dec.Xid, class, dec.Targets, took.Round(time.Millisecond))
	return nil
}

func (d *driver) lose(gpu int) error {
	seen := d.r.gpulet.watch.LostSeen(gpu)
	if _, err := d.r.gpulet.sim.do(fmt.Sprintf("lose %d", gpu)); err != nil {
		return violation("the simulator did not take \"lose %d\": %v", gpu, err)
	}
	d.lost[gpu] = seen
	d.done(faultLose, "lose GPU %d", gpu)
	return nil
}

// restore waits (up to limit) for gpulet to probe the lost GPU and find it
// gone, then restores it: a reset gpulet can see. A lost GPU gpulet never
// noticed is a failure.
func (d *driver) restore(gpu int, limit time.Duration) error {
	seen := d.lost[gpu]
	deadline := time.Now().Add(limit)
	for d.r.gpulet.watch.LostSeen(gpu) <= seen && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if d.r.gpulet.watch.LostSeen(gpu) <= seen {
		return violation("GPU %d was lost and gpulet did not notice within %v (no probe logged it gone)", gpu, limit)
	}
	delete(d.lost, gpu)
	if _, err := d.r.gpulet.sim.do(fmt.Sprintf("restore %d", gpu)); err != nil {
		return violation("the simulator did not take \"restore %d\": %v", gpu, err)
	}
	d.done(faultRestore, "restore GPU %d", gpu)
	return nil
}

// restoreAll restores every lost GPU, in order, at the end of a round.
func (d *driver) restoreAll(limit time.Duration) error {
	for _, gpu := range slices.Sorted(maps.Keys(d.lost)) {
		if err := d.restore(gpu, limit); err != nil {
			return err
		}
	}
	return nil
}

// reload switches the file to another variant and sends SIGHUP. Half the
// time the driver goes on without waiting for the outcome, so the reload
// overlaps the next faults; it is awaited before the next signal, or at
// the settle. gpulet must accept it.
func (d *driver) reload(dec decision) error {
	if err := d.r.awaitPending(); err != nil {
		return err
	}
	if err := d.r.gpulet.writeConfig(d.r.machine.Variants[dec.Variant].YAML); err != nil {
		return err
	}
	d.r.fileVariant = dec.Variant
	if dec.Await {
		return d.r.applyFile()
	}
	rl, err := d.r.gpulet.sendHangUp(d.r.opts.SettleTimeout)
	if err != nil {
		return err
	}
	d.r.pending = &rl
	d.r.markFault()
	d.r.log("SIGHUP for %q, outcome awaited later", d.r.machine.Variants[dec.Variant].Name)
	return nil
}

// badReload writes a file gpulet must refuse, sends SIGHUP, checks the
// refusal and puts the served file back.
func (d *driver) badReload() error {
	if err := d.r.awaitPending(); err != nil {
		return err
	}
	if err := d.r.gpulet.writeConfig(badConfig); err != nil {
		return err
	}
	accepted, refusal, err := d.r.gpulet.hangUp(d.r.opts.SettleTimeout)
	if err != nil {
		return err
	}
	if accepted {
		return violation("gpulet accepted a configuration with replicas: 1 at a reload")
	}
	d.r.stats.add("reloads refused as intended (invalid file)", 1)
	d.done(faultBadReload, "invalid file refused: %s", refusal)
	return d.r.gpulet.writeConfig(d.r.machine.Variants[d.r.fileVariant].YAML)
}

// kill is a crash: gpulet must still be running (one that exited on its own
// is a failure, not a crash the driver caused), then SIGKILL, a restart, and
// the new process's simulator answering.
func (d *driver) kill() error {
	d.r.procMu.Lock()
	defer d.r.procMu.Unlock()
	old := d.r.gpulet.proc.Pid()
	if !d.r.gpulet.proc.Running() {
		return violation("gpulet (pid %d) exited on its own before a scheduled SIGKILL: %s", old, d.r.gpulet.proc.ExitError())
	}
	d.r.countDropped()
	if err := d.r.gpulet.killAndRestart(); err != nil {
		return err
	}
	// The simulator lived in the killed process: its faults went with it.
	clear(d.lost)
	d.r.servedVariant = d.r.fileVariant
	d.r.pending = nil // the new process read the file at start
	if _, err := simGPUs(d.r.gpulet.sim, d.r.opts.SettleTimeout); err != nil {
		return violation("gpulet restarted after SIGKILL (pid %d): %v", d.r.gpulet.proc.Pid(), err)
	}
	d.done(faultKill, "SIGKILL gpulet (pid %d), restarted as pid %d", old, d.r.gpulet.proc.Pid())
	return nil
}

// checkDemand: the run delivered the chaos it demanded.
func (d *driver) checkDemand() error {
	n := minFaults(d.r.slot)
	var short []string
	total := 0
	for k := faultKind(0); k < numFaultKinds; k++ {
		total += d.delivered[k]
		if d.delivered[k] < n {
			short = append(short, fmt.Sprintf("%s %d", k, d.delivered[k]))
		}
	}
	if len(short) > 0 {
		return violation("too little chaos: a %v run must deliver at least %d of each fault kind; delivered and answered: %s",
			d.r.slot, n, strings.Join(short, ", "))
	}
	if total == 0 {
		return violation("too little chaos: the run delivered no fault")
	}
	return nil
}

// deliveredSummary renders the delivered counts.
func (d *driver) deliveredSummary() string {
	var parts []string
	for k := faultKind(0); k < numFaultKinds; k++ {
		parts = append(parts, fmt.Sprintf("%s %d", k, d.delivered[k]))
	}
	return strings.Join(parts, ", ")
}
