package soak

import (
	"fmt"
	"math/rand"
	"sort"
	"time"
)

// podWorker is one stream of pods: admit a pod asking for 1-3 devices of a
// random resource, keep it running a while, delete it; again until the run
// stops. Rejections are expected under chaos (gpulet restarting, devices
// unhealthy, the node full) and only counted; an admission that breaks an
// invariant fails the run.
func (r *machineRun) podWorker(id int, rng *rand.Rand) {
	resources := r.machine.Resources()
	shared := r.machine.Variants[0].Shared
	var running []*heldPod
	defer func() {
		for _, h := range running {
			r.node.free(h)
		}
	}()
	for !r.failed() {
		if !r.pause(time.Duration(20+rng.Intn(300)) * time.Millisecond) {
			return
		}
		// Up to three pods each, freed at random, so the node fills up and
		// empties again and pods live through restarts.
		if len(running) > 0 && (len(running) >= 3 || rng.Intn(4) == 0) {
			i := rng.Intn(len(running))
			r.node.free(running[i])
			running = append(running[:i], running[i+1:]...)
			r.stats.add("pods deleted", 1)
			continue
		}
		res := resources[rng.Intn(len(resources))]
		count := []int{1, 1, 1, 2, 2, 3}[rng.Intn(6)]
		r.gate.RLock()
		h, err := r.node.admit(fmt.Sprintf("w%d", id), res, count, !shared[res], r.elapsed())
		r.gate.RUnlock()
		switch {
		case err == nil:
			running = append(running, h)
			r.stats.add("pods admitted", 1)
		case IsViolation(err):
			r.fail(err)
			return
		default:
			r.stats.reject(err)
		}
	}
}

// pause sleeps for d unless the run stops first.
func (r *machineRun) pause(d time.Duration) bool {
	select {
	case <-r.stop:
		return false
	case <-time.After(d):
		return true
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
