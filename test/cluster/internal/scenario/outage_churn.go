package scenario

// The pod churn of the API-outage scenarios: a loop that keeps `width`
// pods on their way (created, not yet Running), deletes each as soon as it
// runs, and deletes each that ended Failed, recording when each pod was
// wanted, created and seen Running. A create that fails (the API server is
// away) is tried again at the next look with the same name and the same
// time wanted, as a controller would. The loop never touches *T (it runs
// on its own goroutine): what it finds wrong it keeps in violations, which
// the scenario reports.

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gpulet.dev/test/cluster/internal/node"
)

// outageLabel marks the churn's pods.
const outageLabel = "gpulet-outage"

// Each API call of the loop gives up after this; the next look tries again.
const churnCallTimeout = 3 * time.Second

type churnPod struct {
	name     string
	wanted   time.Time // when the loop decided to make it
	created  time.Time // when a create succeeded (or found it made)
	running  time.Time // when first seen Running
	failed   time.Time // when first seen Failed
	reason   string    // a failed pod's reason: message
	deleting bool
}

type churn struct {
	n      *node.Node
	width  int
	newPod func(name string) *corev1.Pod
	// check, when set, runs at every few looks that reached the API
	// server; what it returns is a violation.
	check func(ctx context.Context) []string

	mu         sync.Mutex
	pods       map[string]*churnPod
	seq        int
	paused     bool
	looks      int
	violations map[string]bool
	cancel     context.CancelFunc
	done       chan struct{}
}

func startChurn(ctx context.Context, n *node.Node, width int, newPod func(string) *corev1.Pod,
	check func(context.Context) []string) *churn {
	c := &churn{n: n, width: width, newPod: newPod, check: check, pods: map[string]*churnPod{},
		violations: map[string]bool{}, done: make(chan struct{})}
	ctx, c.cancel = context.WithCancel(ctx)
	go c.run(ctx)
	return c
}

func (c *churn) run(ctx context.Context) {
	defer close(c.done)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		c.step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// stop ends the loop and waits for it.
func (c *churn) stop() {
	c.cancel()
	<-c.done
}

// pause stops making new pods (the ones on their way still run and are
// deleted); resume starts again.
func (c *churn) pause()  { c.setPaused(true) }
func (c *churn) resume() { c.setPaused(false) }
func (c *churn) setPaused(p bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = p
}

func (c *churn) violate(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.violations) < 50 {
		c.violations[msg] = true
	}
}

// takeViolations returns what the loop found wrong since the last call.
func (c *churn) takeViolations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for v := range c.violations {
		out = append(out, v)
	}
	sort.Strings(out)
	c.violations = map[string]bool{}
	return out
}

func (c *churn) step(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, churnCallTimeout)
	list, err := c.n.Client.CoreV1().Pods(ns).List(lctx, metav1.ListOptions{LabelSelector: outageLabel})
	cancel()
	if err != nil {
		return // the API server is away: try again at the next look
	}
	now := time.Now()
	var toDelete []string
	c.mu.Lock()
	onTheWay := 0
	for i := range list.Items {
		p := &list.Items[i]
		cp := c.pods[p.Name]
		if cp == nil {
			continue // not this loop's
		}
		if cp.created.IsZero() {
			cp.created = now
		}
		switch {
		case p.DeletionTimestamp != nil && !cp.running.IsZero():
			// Ran and deleted: its container ends (Succeeded) on the way.
		case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
			if cp.failed.IsZero() {
				cp.failed = now
				cp.reason = fmt.Sprintf("%s %s: %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
			}
		case running(p):
			if cp.running.IsZero() {
				cp.running = now
			}
		case p.DeletionTimestamp == nil:
			onTheWay++
		}
		if (!cp.running.IsZero() || !cp.failed.IsZero()) && p.DeletionTimestamp == nil {
			toDelete = append(toDelete, p.Name)
		}
	}
	var toCreate []*churnPod
	for _, cp := range c.pods {
		if cp.created.IsZero() {
			toCreate = append(toCreate, cp)
		}
	}
	for !c.paused && onTheWay+len(toCreate) < c.width {
		c.seq++
		cp := &churnPod{name: fmt.Sprintf("outage-%04d", c.seq), wanted: now}
		c.pods[cp.name] = cp
		toCreate = append(toCreate, cp)
	}
	c.looks++
	checkNow := c.check != nil && c.looks%4 == 0
	c.mu.Unlock()
	sort.Slice(toCreate, func(i, j int) bool { return toCreate[i].name < toCreate[j].name })
	for _, name := range toDelete {
		dctx, cancel := context.WithTimeout(ctx, churnCallTimeout)
		err := c.n.Client.CoreV1().Pods(ns).Delete(dctx, name, metav1.DeleteOptions{})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			return
		}
	}
	for _, cp := range toCreate {
		if !c.create(ctx, cp) {
			return
		}
	}
	if checkNow {
		cctx, cancel := context.WithTimeout(ctx, churnCallTimeout)
		for _, v := range c.check(cctx) {
			c.violate(v)
		}
		cancel()
	}
}

// create makes one pod; false when the API server did not answer.
func (c *churn) create(ctx context.Context, cp *churnPod) bool {
	p := c.newPod(cp.name)
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[outageLabel] = "1"
	cctx, cancel := context.WithTimeout(ctx, churnCallTimeout)
	_, err := c.n.Client.CoreV1().Pods(ns).Create(cctx, p, metav1.CreateOptions{})
	cancel()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return false
	}
	c.mu.Lock()
	cp.created = time.Now()
	c.mu.Unlock()
	return true
}

// snapshot copies the records.
func (c *churn) snapshot() []churnPod {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]churnPod, 0, len(c.pods))
	for _, cp := range c.pods {
		out = append(out, *cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// runningIn counts the pods first seen Running in [from, to).
func (c *churn) runningIn(from, to time.Time) int {
	k := 0
	for _, p := range c.snapshot() {
		if !p.running.IsZero() && !p.running.Before(from) && p.running.Before(to) {
			k++
		}
	}
	return k
}

// waitDone waits until every pod wanted before `before` ran or failed,
// at most `limit`; it returns the pods still on their way otherwise.
func (c *churn) waitDone(ctx context.Context, before time.Time, limit time.Duration) []churnPod {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		var left []churnPod
		for _, p := range c.snapshot() {
			if p.wanted.Before(before) && p.running.IsZero() && p.failed.IsZero() {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return left
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// waitGone waits until no pod of the loop is left on the API server.
func (c *churn) waitGone(t *T) {
	err := t.N.WaitFor(t.Ctx, "the churn's pods to be gone", 180*time.Second, func(ctx context.Context) (bool, error) {
		list, err := t.N.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: outageLabel})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, t.N.Kubectl("get", "pods", "-n", ns, "-l", outageLabel, "-o", "wide"))
	}
}

// deleteAll deletes every pod of the loop (after a failure, or at the end).
func deleteOutagePods(t *T) {
	err := t.N.Client.CoreV1().Pods(ns).DeleteCollection(t.Ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: outageLabel})
	if err != nil {
		t.Errorf("delete the churn's pods: %v", err)
	}
}
