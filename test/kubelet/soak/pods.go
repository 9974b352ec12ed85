package soak

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"

	"gpulet.dev/test/kubelet/harness"
)

// podWorker is one stream of pods: admit a pod asking for 1-3 devices of a
// random resource, keep it running a while, delete it; again until the run
// stops. Rejections are expected under chaos (gpulet restarting, devices
// unhealthy, the node full) and only counted; an admission that breaks an
// invariant fails the run.
func (r *machineRun) podWorker(id int, rng *rand.Rand) {
	w := &podWorker{r: r, id: id, resources: r.machine.Resources(), shared: r.machine.Variants[0].Shared}
	defer func() {
		for _, h := range w.running {
			r.node.free(h)
		}
	}()
	for r.pause(time.Duration(20+rng.Intn(300)) * time.Millisecond) {
		// Each step draws from its own generator, as the driver's do.
		if err := w.step(rand.New(rand.NewSource(rng.Int63()))); err != nil {
			r.fail(err)
			return
		}
	}
}

type podWorker struct {
	r         *machineRun
	id        int
	resources []string
	shared    map[string]bool
	running   []*heldPod
}

// step frees or admits one pod. Up to three pods each, freed at random, so
// the node fills up and empties again and pods live through restarts.
func (w *podWorker) step(rng *rand.Rand) error {
	if len(w.running) > 0 && (len(w.running) >= 3 || rng.Intn(4) == 0) {
		i := rng.Intn(len(w.running))
		w.r.node.free(w.running[i])
		w.running = append(w.running[:i], w.running[i+1:]...)
		w.r.stats.add("pods deleted", 1)
		return nil
	}
	res := w.resources[rng.Intn(len(w.resources))]
	count := []int{1, 1, 1, 2, 2, 3}[rng.Intn(6)]
	var panicked *harness.PanicError
	w.r.gate.RLock()
	h, err := w.r.node.admit(fmt.Sprintf("w%d", w.id), res, count, !w.shared[res], w.r.elapsed())
	w.r.gate.RUnlock()
	switch {
	case err == nil:
		w.running = append(w.running, h)
		w.r.stats.add("pods admitted", 1)
	case IsViolation(err):
		return err
	case errors.As(err, &panicked):
		// A bug of the kubelet's, not gpulet's: counted and described once.
		if w.r.stats.get("kubelet panics") == 0 {
			w.r.stats.note("the kubelet's device manager panicked (restarted, as a crashed kubelet is): %v\n%s",
				panicked.Value, firstLines(panicked.Stack, 12))
		}
		w.r.stats.add("kubelet panics", 1)
		w.r.stats.reject(err)
	default:
		w.r.stats.reject(err)
	}
	return nil
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

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
