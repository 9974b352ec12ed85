package soak

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"gpulet.dev/test/kubelet/harness"
)

// settle runs after the faults of a round stopped (lost GPUs restored):
// pods are paused, and the node must become whole again within
// SettleTimeout of the last fault delivered: gpulet serves the file's
// configuration and the kubelet sees every device of every resource
// healthy. Then everything is checked and gpulet's /proc is sampled.
func (r *machineRun) settle(what string) error {
	r.gate.Lock()
	defer r.gate.Unlock()
	if err := r.awaitPending(); err != nil {
		return err
	}
	if r.servedVariant != r.fileVariant {
		if err := r.applyFile(); err != nil {
			return err
		}
		if r.servedVariant != r.fileVariant {
			_, _, refusal := r.gpulet.watch.Reloads()
			return violation("%s: with every GPU back, gpulet still refuses the valid file %q: %s",
				what, r.machine.Variants[r.fileVariant].Name, refusal)
		}
	}
	v := r.machine.Variants[r.servedVariant]
	var ids map[string][]string
	deadline := r.recoveryDeadline()
	err := harness.Wait(time.Until(deadline), "every device healthy in the kubelet", func() (bool, string, error) {
		if !r.gpulet.proc.Running() {
			return false, "", violation("gpulet exited on its own: %s", r.gpulet.proc.ExitError())
		}
		ok, seen, now := r.whole(v)
		ids = now
		return ok, seen, nil
	})
	if err != nil {
		if IsViolation(err) {
			return err
		}
		return violation("%s: not every healthy GPU is advertised %v after the last fault (configuration %q): %v",
			what, r.opts.SettleTimeout, v.Name, err)
	}
	lastFault := r.start
	if t := r.lastFault.Load(); t != 0 {
		lastFault = time.Unix(0, t)
	}
	took := time.Since(lastFault)
	if lastFault.After(r.lastSettled) {
		r.stats.settled(took)
	}
	r.lastSettled = time.Now()
	if err := r.checkSettled(what, v, ids); err != nil {
		return err
	}
	// Streams of clients that went away end within gpulet's cancellation
	// poll; the sample is taken when only the kubelet's are left.
	err = harness.Wait(r.opts.SettleTimeout, "only the kubelet's ListAndWatch streams to be open", func() (bool, string, error) {
		var seen []string
		for _, res := range r.machine.Resources() {
			if n := r.gpulet.watch.Streams(res); n != 1 {
				seen = append(seen, fmt.Sprintf("%s: %d open", res, n))
			}
		}
		return len(seen) == 0, strings.Join(seen, ", "), nil
	})
	if err != nil {
		return violation("%s: %v", what, err)
	}
	s, err := r.gpulet.sample(true)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.opts.Out, "[%s %6.1fs] %s: whole again after %v (%s); %d pods running; gpulet %s\n",
		r.machine.Profile, r.elapsed().Seconds(), what, took.Round(time.Millisecond), v.Name, r.node.heldCount(), s)
	return nil
}

// whole reports whether the kubelet shows every device of every resource
// healthy, as variant v says, and returns the healthy device IDs per
// resource it saw. The counts and the IDs are two reads of the device
// manager: a ListAndWatch stream that ends between them (the kubelet marks
// its devices unhealthy until the plugin registers again) shows as a short
// ID list, so the node is whole only when both agree with v.
func (r *machineRun) whole(v Variant) (bool, string, map[string][]string) {
	res := r.node.resources()
	ids := map[string][]string{}
	var bad []string
	for _, name := range r.machine.Resources() {
		want := int64(v.Counts[name])
		got := res[name]
		ids[name] = r.node.healthyIDs(name)
		if got.Capacity != want || got.Allocatable != want || int64(len(ids[name])) != want {
			bad = append(bad, fmt.Sprintf("%s capacity %d allocatable %d healthy IDs %d (want %d)",
				name, got.Capacity, got.Allocatable, len(ids[name]), want))
		}
	}
	return len(bad) == 0, strings.Join(bad, "; "), ids
}

// checkSettled: allocations as admitted and their container options
// unchanged, gpulet still answering each one's IDs with the same devices,
// device IDs (as whole saw them) exactly those the configuration advertises
// and stable, failRequestsGreaterThanOne as the file says, and a pod can
// get a device of every resource that has a free one.
func (r *machineRun) checkSettled(what string, v Variant, healthy map[string][]string) error {
	if err := r.node.checkHeld(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := r.node.checkRunOptions(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := r.checkAllocationsOnGpulet(v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, res := range r.machine.Resources() {
		ids := healthy[res]
		if err := r.inv.checkAdvertised(v.Name, res, ids); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if v.Shared[res] {
			if err := r.checkReplicaLimit(v, res); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		key := v.Name + " " + res
		if known, ok := r.knownIDs[key]; !ok {
			r.knownIDs[key] = ids
		} else if !slices.Equal(known, ids) {
			return violation("%s: %s advertises other device IDs than before with the same configuration %q: %v, before %v",
				what, res, v.Name, diff(ids, known), diff(known, ids))
		}
		if len(r.node.freeIDs(res)) == 0 {
			continue
		}
		h, err := r.node.admit("probe", res, 1, !v.Shared[res], r.elapsed())
		if err != nil {
			if IsViolation(err) {
				return fmt.Errorf("%s: %w", what, err)
			}
			return violation("%s: the node is whole, %s has a free device, and a pod asking for one is refused: %v", what, res, err)
		}
		r.node.free(h)
		r.stats.add("probe pods", 1)
	}
	return nil
}

// diff lists what a has and b lacks.
func diff(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// finish: the last settle, every pod deleted, the baseline rule over
// gpulet's lives, and a clean SIGTERM shutdown.
func (r *machineRun) finish() error {
	if err := r.settle("final"); err != nil {
		return err
	}
	if err := r.checkBaselines(); err != nil {
		return err
	}
	r.countDropped()
	if err := r.gpulet.proc.Stop(10 * time.Second); err != nil {
		return violation("gpulet did not stop cleanly on SIGTERM: %v", err)
	}
	if exit := r.gpulet.proc.ExitError(); exit != "exited with status 0" {
		return violation("gpulet %s after SIGTERM", exit)
	}
	return nil
}

// countDropped adds the events the simulator of the current gpulet process
// dropped (its state ends with the process).
func (r *machineRun) countDropped() {
	if n, err := r.gpulet.sim.dropped(); err == nil {
		r.stats.add("NVML events dropped", n)
	}
}
