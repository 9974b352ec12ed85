package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"gpulet.dev/test/kubelet/harness"
)

func (d *demo) inventory() error {
	d.all = d.kubelet.HealthyDevices(d.spec.Resource)
	d.say("The plugin sent its device list over ListAndWatch. The kubelet now knows %d devices:", len(d.all))
	for _, dev := range d.all {
		numa := "no NUMA node given"
		if len(dev.NUMANodes) > 0 {
			numa = "NUMA node " + joinInts(dev.NUMANodes)
		}
		d.detail("%-44s Healthy   %s", dev.ID, numa)
	}
	r := d.kubelet.Resources()[d.spec.Resource]
	d.detail("In the node status the kubelet reports %s: capacity %d, allocatable %d.",
		d.spec.Resource, r.Capacity, r.Allocatable)
	d.detail("The scheduler can now place pods that ask for %s on this node.", d.spec.Resource)
	return nil
}

func (d *demo) allocate() error {
	n := min(d.gpus, len(d.all))
	pod := harness.NewPod("demo-pod", d.spec.Resource, n)
	d.say("A pod asks for %d %s (resources.limits: {%s: %d}).", n, d.spec.Resource, d.spec.Resource, n)
	d.describeHints(pod)
	opts, err := d.kubelet.Admit(pod)
	if err != nil {
		return err
	}
	o := opts["main"]
	if d.prefers {
		d.detail("The kubelet asked the plugin which %d devices it prefers (GetPreferredAllocation).", n)
	}
	d.detail("The kubelet chose %s and called the plugin's Allocate with them.",
		strings.Join(o.DeviceIDs[d.spec.Resource], ", "))
	d.detail("The container runtime is told to start the container with:")
	for _, line := range strings.Split(strings.TrimRight(o.String(), "\n"), "\n") {
		d.detail("%s", line)
	}
	return nil
}

func (d *demo) describeHints(pod *v1.Pod) {
	hints := d.kubelet.TopologyHints(pod, &pod.Spec.Containers[0])[d.spec.Resource]
	if len(hints) == 0 {
		d.detail("The devices carry no NUMA information, so the kubelet has no topology preference.")
		return
	}
	var parts []string
	for _, h := range hints {
		kind := "possible"
		if h.Preferred {
			kind = "preferred"
		}
		parts = append(parts, fmt.Sprintf("NUMA %s (%s)", joinInts(h.NUMANodeAffinity.GetBits()), kind))
	}
	d.detail("NUMA placements the kubelet's topology manager would consider: %s.", strings.Join(parts, ", "))
}

func (d *demo) health() error {
	if d.spec.FaultCmd == "" {
		d.say("Device health: skipped (give --fault-cmd to break a device, --recover-cmd to repair it).")
		return nil
	}
	d.say("A device fails: running %q.", d.spec.FaultCmd)
	if err := d.waitHealth(d.spec.FaultCmd, func(n int64) bool { return n < int64(len(d.all)) }); err != nil {
		return err
	}
	if d.spec.RecoverCmd == "" {
		return nil
	}
	d.say("The device recovers: running %q.", d.spec.RecoverCmd)
	return d.waitHealth(d.spec.RecoverCmd, func(n int64) bool { return n == int64(len(d.all)) })
}

// waitHealth runs a hook and waits until the allocatable count satisfies ok.
func (d *demo) waitHealth(hook string, ok func(int64) bool) error {
	cmd := exec.Command("sh", "-c", hook)
	cmd.Env = append(append(os.Environ(), d.spec.PluginEnv...), "PLUGIN_PID="+strconv.Itoa(d.plugin.Pid()))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%q failed: %v: %s", hook, err, out)
	}
	err := harness.Wait(d.spec.Timeout, "a health change", func() (bool, string, error) {
		r := d.kubelet.Resources()[d.spec.Resource]
		return ok(r.Allocatable), fmt.Sprintf("allocatable %d", r.Allocatable), nil
	})
	if err != nil {
		return err
	}
	healthy := d.kubelet.HealthyDevices(d.spec.Resource)
	d.detail("The plugin sent a new device list over ListAndWatch. Device health as the kubelet sees it:")
	for _, dev := range d.all {
		state := "Unhealthy"
		if slices.ContainsFunc(healthy, func(h harness.Device) bool { return h.ID == dev.ID }) {
			state = "Healthy"
		}
		d.detail("  %-44s %s", dev.ID, state)
	}
	r := d.kubelet.Resources()[d.spec.Resource]
	why := ""
	if r.Allocatable < r.Capacity {
		why = " (unhealthy devices are not given to new pods)"
	}
	d.detail("Node status: capacity %d, allocatable %d%s.", r.Capacity, r.Allocatable, why)
	return nil
}

func (d *demo) restartKubelet() error {
	d.say("The kubelet restarts (as after an upgrade). It deletes every socket in its directory,\n" +
		"    the plugin's too, and opens a new kubelet.sock; the plugin must notice and register again.")
	before := harness.Registrations(d.spec.Resource)
	// Devices that were unhealthy before the restart stay so after it.
	wantAllocatable := d.kubelet.Resources()[d.spec.Resource].Allocatable
	start := time.Now()
	var err error
	if d.kubelet, err = d.kubelet.Restart(); err != nil {
		return err
	}
	err = harness.Wait(d.spec.Timeout, "the plugin to register again", func() (bool, string, error) {
		r := d.kubelet.Resources()[d.spec.Resource]
		return harness.Registrations(d.spec.Resource) > before &&
				r.Capacity == int64(len(d.all)) && r.Allocatable == wantAllocatable,
			fmt.Sprintf("capacity %d, allocatable %d", r.Capacity, r.Allocatable), nil
	})
	if err != nil {
		return err
	}
	d.detail("The plugin registered again after %v.", time.Since(start).Round(time.Millisecond))
	opts, err := d.kubelet.RunOptions(d.pods.Active()[0])
	if err != nil {
		return err
	}
	d.detail("The running pod keeps %s: the kubelet's checkpoint file remembered them.",
		strings.Join(opts["main"].DeviceIDs[d.spec.Resource], ", "))
	return nil
}

func (d *demo) stopPlugin() error {
	d.say("The plugin stops (SIGTERM).")
	if err := d.plugin.Stop(10 * time.Second); err != nil {
		return err
	}
	err := harness.Wait(d.spec.Timeout, "the kubelet to notice", func() (bool, string, error) {
		r := d.kubelet.Resources()[d.spec.Resource]
		return r.Allocatable == 0, fmt.Sprintf("allocatable %d", r.Allocatable), nil
	})
	if err != nil {
		return err
	}
	r := d.kubelet.Resources()[d.spec.Resource]
	d.detail("Its ListAndWatch stream ended, so the kubelet marked every device unhealthy:")
	d.detail("capacity %d, allocatable %d. It forgets %s after 5 minutes unless the plugin comes back.",
		r.Capacity, r.Allocatable, d.spec.Resource)
	return nil
}

func joinInts[T int | int64](v []T) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatInt(int64(x), 10)
	}
	return strings.Join(s, ",")
}
