package harness

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	kubeletmetrics "k8s.io/kubernetes/pkg/kubelet/metrics"
)

// pollInterval is how often Wait re-checks its condition.
const pollInterval = 20 * time.Millisecond

// Wait polls cond until it reports done, returns an error (which aborts the
// wait), or timeout passes. cond also describes what it saw, which a timeout
// error quotes, so a failure says what the kubelet saw instead.
func Wait(timeout time.Duration, what string, cond func() (done bool, seen string, err error)) error {
	deadline := time.Now().Add(timeout)
	for {
		done, seen, err := cond()
		if err != nil {
			return fmt.Errorf("while waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s; last seen: %s", timeout, what, seen)
		}
		time.Sleep(pollInterval)
	}
}

var registerMetrics sync.Once

// ensureMetrics registers the kubelet's metrics; until then they count nothing.
func ensureMetrics() { registerMetrics.Do(kubeletmetrics.Register) }

// Registrations returns how many Register calls for resource the kubelet's
// registration server has received in this process, read from the kubelet's
// own metric kubelet_device_plugin_registration_total. Counting survives
// kubelet restarts inside the process, so callers compare before and after.
func Registrations(resource string) float64 {
	ensureMetrics()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() != "kubelet_device_plugin_registration_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "resource_name" && l.GetValue() == resource {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
