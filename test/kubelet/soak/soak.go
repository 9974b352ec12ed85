// Package soak is gpulet's chaos soak: gpulet runs under the kubelet's own
// device manager on simulated nodes while a driver injects faults at random
// (kubelet restarts, Xid storms, lost GPUs, failing event waits, config
// reloads, SIGKILLs), pods allocate and free devices, and checkers hold the
// invariants: a minimum of every fault kind delivered and answered, no
// device ID in two running pods and every pod seeing exactly the devices
// behind its IDs, allocations that survive restarts (in the kubelet and in
// gpulet's answers), failRequestsGreaterThanOne as configured, every
// healthy device advertised again within a limit after the last fault, and
// gpulet's fds, threads and RSS back at their baseline. docs/testing.md
// describes it.
//
// The run is a sequence of rounds per machine: a chaos phase (faults and
// pods), then a settle phase that stops the faults, waits for the node to
// be whole again and checks everything. The driver's decisions come from
// one seed and its own state only, so a seed replays them (timing and the
// pods' outcomes still differ).
package soak

import (
	"fmt"
	"io"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gpulet.dev/test/kubelet/harness"
)

// Options configure a soak.
type Options struct {
	Gpulet        string        // gpulet binary
	NVMLLib       string        // the NVML simulator library
	Duration      time.Duration // whole soak, split evenly between the machines
	Seed          int64
	SettleTimeout time.Duration // limit for the node to be whole after the last fault
	Pods          int           // concurrent pod workers
	Machines      []Machine
	Out           io.Writer // report and round lines
	Verbose       io.Writer // if set: every fault, gpulet and kubelet log lines
	Decisions     io.Writer // if set: one line per decision of the driver
}

// WithDefaults fills in unset options.
func (o Options) WithDefaults() Options {
	if o.Duration == 0 {
		o.Duration = 30 * time.Minute
	}
	if o.SettleTimeout == 0 {
		o.SettleTimeout = 30 * time.Second
	}
	if o.Pods == 0 {
		o.Pods = 6
	}
	if o.Machines == nil {
		o.Machines = Machines()
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return o
}

// Run soaks every machine in turn and prints the report. The error says
// which invariant broke, with the round's faults and the last log lines.
func Run(o Options) error {
	o = o.WithDefaults()
	fmt.Fprintf(o.Out, "soak: seed %d (reproduce with SOAK_SEED=%d), %v over %d machines, settle limit %v, %d pod workers\n",
		o.Seed, o.Seed, o.Duration, len(o.Machines), o.SettleTimeout, o.Pods)
	harness.KubeletLog(0, o.Verbose)
	slot := o.Duration / time.Duration(len(o.Machines))
	var reports []string
	for _, m := range o.Machines {
		if err := m.Validate(); err != nil {
			return err
		}
		r := &machineRun{opts: o, machine: m, slot: slot, seed: o.Seed + m.SeedOffset}
		err := r.run()
		reports = append(reports, r.report(err))
		fmt.Fprint(o.Out, reports[len(reports)-1])
		if err != nil {
			return fmt.Errorf("soak failed on %s (%s): %w", m.Name, replayHint(o.Seed, m), err)
		}
	}
	fmt.Fprintf(o.Out, "soak: PASS, seed %d\n", o.Seed)
	return nil
}

// replayHint says how to run a node's part again, for failure lines.
func replayHint(seed int64, m Machine) string {
	return fmt.Sprintf("seed %d; replay with --seed %d --machine %s", seed, seed, m.Profile)
}

// machineRun is the soak of one machine.
type machineRun struct {
	opts    Options
	machine Machine
	slot    time.Duration
	seed    int64
	start   time.Time

	node     *node
	gpulet   *gpuletProc
	stats    *stats
	faults   faultLog
	inv      *inventory
	driver   *driver
	migUUIDs []string
	rounds   int

	// Owned by the driver's goroutine (and the settle phase, which runs
	// after it stopped).
	fileVariant   int // the variant in the file
	servedVariant int // the variant gpulet last accepted
	knownIDs      map[string][]string
	lastSettled   time.Time // when the last settle found the node whole
	pending       *reload   // a SIGHUP whose outcome is not known yet
	simStatus     string    // the simulator's status at a failure

	lastFault atomic.Int64 // UnixNano of the last fault the driver delivered

	procMu sync.RWMutex // held by a SIGKILL+restart: the process may be down

	gate sync.RWMutex // pod workers hold it to admit; settle takes it to pause them

	failOnce sync.Once
	failure  error
	stopOnce sync.Once
	stop     chan struct{} // closed on failure or at the end
}

func (r *machineRun) run() (err error) {
	r.start = time.Now()
	r.stats = newStats()
	r.stop = make(chan struct{})
	r.knownIDs = map[string][]string{}
	dir, err := os.MkdirTemp("", "gpulet-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := harness.ResetDir(); err != nil {
		return err
	}
	if r.node, err = startNode(); err != nil {
		return err
	}
	defer r.node.stop()
	var tee io.Writer
	if r.opts.Verbose != nil {
		tee = prefixWriter{w: r.opts.Verbose, prefix: "gpulet: "}
	}
	if r.gpulet, err = startGpulet(r.opts, r.machine, dir, r.start, tee); err != nil {
		return err
	}
	defer r.gpulet.proc.Stop(10 * time.Second)
	defer func() {
		if err != nil { // for the report, while the simulator still runs
			r.simStatus, _ = r.gpulet.sim.do("status")
		}
	}()
	fmt.Fprintf(r.opts.Out, "\n== %s (simulator profile %s): %v, node seed %d (run seed %d); demanded: %d of each fault kind\n",
		r.machine.Name, r.machine.Profile, r.slot, r.seed, r.opts.Seed, minFaults(r.slot))
	gpus, err := simGPUs(r.gpulet.sim, r.opts.SettleTimeout)
	if err != nil {
		return err
	}
	if r.inv, err = newInventory(r.machine, gpus); err != nil {
		return err
	}
	r.node.inv = r.inv
	r.migUUIDs = r.inv.migDevices()
	r.driver = newDriver(r, r.seed+2)
	if err := r.settle("warm-up"); err != nil {
		return err
	}
	// One pod per resource lives through the whole run: its allocation must
	// survive every restart.
	for _, res := range r.machine.Resources() {
		h, err := r.node.admit("survivor", res, 1, !r.machine.Variants[0].Shared[res], r.elapsed())
		if err != nil {
			return fmt.Errorf("admitting a first pod for %s: %w", res, err)
		}
		r.log("pod %s holds %s %v for the whole run", h.Pod.Name, res, h.IDs)
	}
	var wg sync.WaitGroup
	r.background(&wg)
	err = r.runRounds()
	r.stopBackground()
	wg.Wait()
	if err == nil {
		err = r.failure
	}
	if err == nil {
		err = r.driver.checkDemand()
	}
	if err == nil {
		err = r.finish()
	}
	return err
}

// directClients call gpulet's sockets beside the kubelet (direct.go).
const directClients = 2

// background starts the pod workers, the direct clients, the allocation
// checker and the /proc sampler; they run until r.stop closes.
func (r *machineRun) background(wg *sync.WaitGroup) {
	for i := 0; i < r.opts.Pods; i++ {
		rng := rand.New(rand.NewSource(r.seed + 10 + int64(i)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.podWorker(i, rng)
		}()
	}
	for i := 0; i < directClients; i++ {
		rng := rand.New(rand.NewSource(r.seed + 100 + int64(i)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.directClient(rng)
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		r.every(250*time.Millisecond, r.checkContinuously)
	}()
	go func() {
		defer wg.Done()
		r.every(time.Second, func() error {
			r.procMu.RLock()
			defer r.procMu.RUnlock()
			_, _ = r.gpulet.sample(false) // the process may just be exiting
			return nil
		})
	}()
}

func (r *machineRun) every(period time.Duration, f func() error) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			if err := f(); err != nil {
				r.fail(err)
				return
			}
		}
	}
}

// checkContinuously: no device in two running pods, allocations as
// admitted, and gpulet has not died on its own.
func (r *machineRun) checkContinuously() error {
	r.procMu.RLock()
	running, exit := r.gpulet.proc.Running(), r.gpulet.proc.ExitError()
	r.procMu.RUnlock()
	if !running {
		return violation("gpulet exited on its own: %s", exit)
	}
	r.stats.add("continuous checks", 1)
	return r.node.checkHeld()
}

func (r *machineRun) fail(err error) {
	r.failOnce.Do(func() { r.failure = err })
	r.stopBackground()
}

// stopBackground ends the pod workers, clients, checker and sampler.
func (r *machineRun) stopBackground() { r.stopOnce.Do(func() { close(r.stop) }) }

func (r *machineRun) stopping() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

func (r *machineRun) elapsed() time.Duration { return time.Since(r.start) }

// killsAllowed: SIGKILLs only in the first half of the slot, so the last
// gpulet life is long enough for its fds, threads and RSS to show a leak.
func (r *machineRun) killsAllowed() bool { return r.elapsed() < r.slot/2 }

// markFault records that a fault was just delivered: recovery is timed
// from the last one.
func (r *machineRun) markFault() { r.lastFault.Store(time.Now().UnixNano()) }

// recoveryDeadline is when the node must be whole again: SettleTimeout
// after the last fault delivered (or from now, before the first fault).
func (r *machineRun) recoveryDeadline() time.Time {
	if t := r.lastFault.Load(); t != 0 && time.Unix(0, t).After(r.lastSettled) {
		return time.Unix(0, t).Add(r.opts.SettleTimeout)
	}
	return time.Now().Add(r.opts.SettleTimeout)
}

func (r *machineRun) log(format string, args ...any) {
	r.faults.add(r.elapsed(), format, args...)
	if r.opts.Verbose != nil {
		fmt.Fprintf(r.opts.Verbose, "fault %8.3fs  %s\n", r.elapsed().Seconds(), fmt.Sprintf(format, args...))
	}
}

// Rounds: a chaos phase of minSteps-maxSteps driver steps (a step every
// 0.1-0.6 s plus its own time), then a settle.
const (
	minSteps, maxSteps = 12, 36
	minChaos           = 6 * time.Second // no round starts with less of the slot left
)

// runRounds runs chaos + settle rounds until the slot is used up. The
// number of steps of a round and each step's generator come from the seed;
// the clock only cuts the last round short.
func (r *machineRun) runRounds() error {
	rng := rand.New(rand.NewSource(r.seed + 1))
	d := r.driver
	for r.elapsed()+minChaos < r.slot && !r.stopping() {
		r.rounds++
		r.faults.reset()
		steps := minSteps + rng.Intn(maxSteps-minSteps+1)
		for i := 1; i <= steps && r.elapsed() < r.slot && !r.stopping(); i++ {
			if err := d.step(r.rounds, i, rng.Int63()); err != nil {
				return err
			}
			time.Sleep(time.Duration(100+rng.Intn(500)) * time.Millisecond)
		}
		if r.stopping() {
			return r.failure
		}
		if err := d.restoreAll(r.opts.SettleTimeout); err != nil {
			return err
		}
		if err := r.settle(fmt.Sprintf("round %d", r.rounds)); err != nil {
			return err
		}
	}
	return nil
}

// applyFile sends SIGHUP for the variant in the file and waits for the
// outcome.
func (r *machineRun) applyFile() error {
	r.procMu.RLock()
	rl, err := r.gpulet.sendHangUp(r.opts.SettleTimeout)
	r.procMu.RUnlock()
	if err != nil {
		return err
	}
	r.markFault()
	r.pending = &rl
	return r.awaitPending()
}

// awaitPending waits for the outcome of the last SIGHUP, if not known yet.
// gpulet must accept every valid file: a refusal is a failure.
func (r *machineRun) awaitPending() error {
	if r.pending == nil {
		return nil
	}
	rl := *r.pending
	r.pending = nil
	r.procMu.RLock()
	defer r.procMu.RUnlock()
	v := r.machine.Variants[r.fileVariant]
	accepted, refusal, err := r.gpulet.awaitReload(rl, r.opts.SettleTimeout)
	if err != nil {
		return err
	}
	if !accepted {
		return violation("gpulet refused the valid file %q at a reload: %s", v.Name, refusal)
	}
	r.servedVariant = r.fileVariant
	r.driver.done(faultReload, "reload to %q", v.Name)
	return nil
}

type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	_, err := io.WriteString(p.w, p.prefix+strings.TrimPrefix(string(b), "plugin: "))
	return len(b), err
}
