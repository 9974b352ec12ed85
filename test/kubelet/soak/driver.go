package soak

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strconv"
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
)

var faultWeights = []struct {
	kind   faultKind
	weight int
}{
	{faultXidStorm, 6},
	{faultLose, 4},
	{faultRestore, 6},
	{faultWaitError, 4},
	{faultKubeletRestart, 2},
	{faultReload, 4},
	{faultBadReload, 1},
	{faultKill, 2},
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

// driver issues random faults during a round's chaos phase. It runs on one
// goroutine; lost is the GPUs it made lose, with gpulet's count of "probed
// lost" lines for that GPU when it did.
type driver struct {
	r    *machineRun
	rng  *rand.Rand // this step's
	lost map[int]int
}

// step issues one fault. The error is a broken invariant or a harness
// failure. Each step draws from its own generator, seeded by one draw of the
// run's: whatever a step could or could not do (a GPU not yet probed, the
// simulator down), the following steps make the same choices.
func (d *driver) step(seed int64) error {
	d.rng = rand.New(rand.NewSource(seed))
	kind := d.pick()
	switch kind {
	case faultXidStorm:
		return d.xidStorm()
	case faultLose:
		return d.lose()
	case faultRestore:
		return d.restoreOne()
	case faultWaitError:
		code := []int{999, 15}[d.rng.Intn(2)]
		count := 1 + d.rng.Intn(5)
		return d.sim("wait-error", fmt.Sprintf("wait-error %d %d", code, count), count)
	case faultKubeletRestart:
		d.r.log("kubelet restart")
		d.r.stats.add("kubelet restarts", 1)
		return d.r.node.restartKubelet()
	case faultReload:
		return d.reload()
	case faultBadReload:
		return d.badReload()
	case faultKill:
		return d.kill()
	}
	return nil
}

func (d *driver) pick() faultKind {
	var kinds []faultKind
	var weights []int
	total := 0
	for _, f := range faultWeights {
		if !d.allowed(f.kind) {
			continue
		}
		kinds = append(kinds, f.kind)
		weights = append(weights, f.weight)
		total += f.weight
	}
	x := d.rng.Intn(total)
	for i, w := range weights {
		if x < w {
			return kinds[i]
		}
		x -= w
	}
	return kinds[len(kinds)-1]
}

func (d *driver) allowed(kind faultKind) bool {
	switch kind {
	case faultLose:
		return len(d.lost) < maxLost
	case faultRestore:
		return len(d.restorable()) > 0
	case faultKill:
		return d.r.killsAllowed()
	}
	return true
}

// sim sends one command; a simulator that does not answer (gpulet is
// starting after a SIGKILL) skips the fault.
func (d *driver) sim(what, line string, n int) error {
	_, err := d.r.gpulet.sim.do(line)
	if errors.Is(err, errSimDown) {
		d.r.stats.add("skipped: simulator not answering", 1)
		d.r.log("%s skipped: %v", line, err)
		return nil
	}
	if err != nil {
		return err
	}
	d.r.stats.add(what, n)
	d.r.log("%s", line)
	return nil
}

// targets are GPU indexes and, on a MIG machine, MIG device UUIDs.
func (d *driver) target() string {
	if len(d.r.migUUIDs) > 0 && d.rng.Intn(2) == 0 {
		return d.r.migUUIDs[d.rng.Intn(len(d.r.migUUIDs))]
	}
	return strconv.Itoa(d.rng.Intn(d.r.machine.GPUs))
}

// xidStorm sends stormEvents Xids at up to stormRate per second to one to
// three targets: mostly application errors, one storm in three fatal.
func (d *driver) xidStorm() error {
	targets := make([]string, 1+d.rng.Intn(3))
	for i := range targets {
		targets[i] = d.target()
	}
	xids, class := ignoredXids, "ignored"
	if d.rng.Intn(3) == 0 {
		xids, class = fatalXids, "fatal"
	}
	xid := xids[d.rng.Intn(len(xids))]
	start := time.Now()
	sent := 0
	for sent < stormEvents {
		line := fmt.Sprintf("xid %s %d", targets[sent%len(targets)], xid)
		if _, err := d.r.gpulet.sim.do(line); err != nil {
			if errors.Is(err, errSimDown) {
				d.r.stats.add("skipped: simulator not answering", 1)
				break
			}
			return err
		}
		sent++
		if ahead := time.Duration(sent)*time.Second/stormRate - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	took := time.Since(start)
	d.r.stats.add("xid storms", 1)
	d.r.stats.add("xid events ("+class+")", sent)
	d.r.stats.add("xid storm milliseconds", int(took.Milliseconds()))
	d.r.log("xid storm: %d x Xid %d (%s) on %v in %v", sent, xid, class, targets, took.Round(time.Millisecond))
	return nil
}

func (d *driver) lose() error {
	var candidates []int
	for i := 0; i < d.r.machine.GPUs; i++ {
		if _, lost := d.lost[i]; !lost {
			candidates = append(candidates, i)
		}
	}
	gpu := candidates[d.rng.Intn(len(candidates))]
	seen := d.r.gpulet.watch.LostSeen(gpu)
	_, err := d.r.gpulet.sim.do(fmt.Sprintf("lose %d", gpu))
	if errors.Is(err, errSimDown) {
		d.r.stats.add("skipped: simulator not answering", 1)
		return nil
	}
	if err != nil {
		return err
	}
	d.lost[gpu] = seen
	d.r.stats.add("GPUs lost", 1)
	d.r.log("lose GPU %d", gpu)
	return nil
}

// restorable lists the lost GPUs gpulet has probed and found gone since:
// restoring them is a reset gpulet can see.
func (d *driver) restorable() []int {
	var out []int
	for gpu, seen := range d.lost {
		if d.r.gpulet.watch.LostSeen(gpu) > seen {
			out = append(out, gpu)
		}
	}
	slices.Sort(out)
	return out
}

func (d *driver) restoreOne() error {
	ready := d.restorable()
	return d.restore(ready[d.rng.Intn(len(ready))])
}

func (d *driver) restore(gpu int) error {
	delete(d.lost, gpu)
	_, err := d.r.gpulet.sim.do(fmt.Sprintf("restore %d", gpu))
	if errors.Is(err, errSimDown) {
		// A simulator that went down took the lost state with it.
		return nil
	}
	if err != nil {
		return err
	}
	d.r.stats.add("GPUs restored", 1)
	d.r.log("restore GPU %d", gpu)
	return nil
}

// restoreAll waits (up to limit) for gpulet to probe every lost GPU gone,
// then restores it. A GPU gpulet never probed (its Xid 79 may have been
// dropped from a full event queue while waits failed) is restored anyway
// and noted: if it then stays unhealthy, the settle check says so.
func (d *driver) restoreAll(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for _, gpu := range slices.Sorted(maps.Keys(d.lost)) {
		seen := d.lost[gpu]
		for d.r.gpulet.watch.LostSeen(gpu) <= seen && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if d.r.gpulet.watch.LostSeen(gpu) <= seen {
			d.r.stats.note("GPU %d was restored without gpulet logging a probe that found it lost", gpu)
			d.r.log("GPU %d: no probe found it lost within %v", gpu, limit)
		}
		if err := d.restore(gpu); err != nil {
			return err
		}
	}
	return nil
}

// reload switches the file to another variant and sends SIGHUP. Half the
// time the driver goes on without waiting for the outcome, so the reload
// overlaps the next faults; it is awaited before the next signal, or at
// the settle.
func (d *driver) reload() error {
	if err := d.r.awaitPending(); err != nil {
		return err
	}
	next := d.rng.Intn(len(d.r.machine.Variants) - 1)
	if next >= d.r.fileVariant {
		next++
	}
	if err := d.r.gpulet.writeConfig(d.r.machine.Variants[next].YAML); err != nil {
		return err
	}
	d.r.fileVariant = next
	if d.rng.Intn(2) == 0 {
		return d.r.applyFile()
	}
	rl, err := d.r.gpulet.sendHangUp(d.r.opts.SettleTimeout)
	if err != nil {
		return err
	}
	d.r.pending = &rl
	d.r.log("SIGHUP for %q, outcome awaited later", d.r.machine.Variants[next].Name)
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
	d.r.log("invalid file refused: %s", refusal)
	return d.r.gpulet.writeConfig(d.r.machine.Variants[d.r.fileVariant].YAML)
}

func (d *driver) kill() error {
	d.r.procMu.Lock()
	defer d.r.procMu.Unlock()
	old := d.r.gpulet.proc.Pid()
	d.r.countDropped()
	if err := d.r.gpulet.killAndRestart(); err != nil {
		return err
	}
	// The simulator lived in the killed process: its faults went with it.
	clear(d.lost)
	d.r.servedVariant = d.r.fileVariant
	d.r.pending = nil // the new process read the file at start
	d.r.stats.add("gpulet SIGKILLs", 1)
	d.r.log("SIGKILL gpulet (pid %d), restarted as pid %d", old, d.r.gpulet.proc.Pid())
	return nil
}
