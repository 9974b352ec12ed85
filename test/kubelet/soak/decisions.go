package soak

import (
	"fmt"
	"hash/fnv"
)

// decisionLog records the driver's decisions of one node's run: their
// number, a digest of the sequence (the same seed must give the same digest
// for the same number of decisions), and, if Options.Decisions is set, one
// line per decision there. Owned by the driver's goroutine.
type decisionLog struct {
	n      int
	digest uint64
}

func (l *decisionLog) add(r *machineRun, round, step int, what string) {
	if l.n == 0 {
		l.digest = fnv.New64a().Sum64()
	}
	l.n++
	h := fnv.New64a()
	fmt.Fprintf(h, "%016x %d %d %s", l.digest, round, step, what)
	l.digest = h.Sum64()
	if r.opts.Decisions != nil {
		fmt.Fprintf(r.opts.Decisions, "%s %5d %016x  round %d step %d: %s\n", r.machine.Profile, l.n, l.digest, round, step, what)
	}
	r.log("decision: %s", what)
}

func (l *decisionLog) String() string {
	return fmt.Sprintf("%d decisions, digest %016x", l.n, l.digest)
}
