package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"gpulet.dev/test/kubelet/harness"
	"gpulet.dev/test/kubelet/internal/mountns"
	"gpulet.dev/test/kubelet/scenario"
)

// demo narrates, step by step, what the kubelet sees of a device plugin.
type demo struct {
	spec    scenario.Spec
	gpus    int
	pods    *harness.Pods
	kubelet *harness.Kubelet
	plugin  *harness.PluginProcess
	all     []harness.Device // every device the plugin listed at start
	prefers bool             // the plugin offers GetPreferredAllocation
	step    int
}

func demoMain(args []string) int {
	var o options
	fs := newFlags("demo", &o)
	gpus := fs.Int("gpus", 2, "devices the demo pod asks for")
	if _, err := parse(fs, &o, args); err != nil {
		return 2
	}
	d := &demo{spec: o.spec, gpus: *gpus, pods: harness.NewPods()}
	if d.spec.Timeout == 0 {
		d.spec.Timeout = 20 * time.Second
	}
	err := d.run()
	d.stop()
	if err != nil {
		fmt.Printf("\nThe demo stopped: %v\n", err)
		if d.plugin != nil {
			fmt.Printf("Last plugin output:\n%s", d.plugin.Output.Tail(20))
		}
		return 1
	}
	fmt.Println("\nDone: the plugin behaved as the kubelet expects.")
	return 0
}

func (d *demo) say(format string, args ...any) {
	d.step++
	fmt.Printf("\n[%d] "+format+"\n", append([]any{d.step}, args...)...)
}

func (d *demo) detail(format string, args ...any) { fmt.Printf("    "+format+"\n", args...) }

func (d *demo) run() error {
	fmt.Printf("This demo runs the kubelet's own device manager code (Kubernetes %s,\n"+
		"package k8s.io/kubernetes/pkg/kubelet/cm/devicemanager), unmodified, in a private\n"+
		"sandbox where %s is an empty temporary directory.\n"+
		"It shows what a kubelet sees of the device plugin, and what a container gets.\n",
		harness.KubernetesVersion(), mountns.Dir)
	harness.KubeletLog(d.spec.KubeletLogLevel, d.spec.Verbose)
	if err := harness.ResetDir(); err != nil {
		return err
	}
	var err error
	if d.kubelet, err = harness.StartKubelet(d.pods, d.spec.NUMANodes); err != nil {
		return err
	}
	d.say("The kubelet is up. It listens on %s/kubelet.sock for device plugins to register.", mountns.Dir)
	steps := []func() error{d.register, d.inventory, d.allocate, d.health, d.restartKubelet, d.stopPlugin}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) stop() {
	if d.plugin != nil {
		_ = d.plugin.Stop(10 * time.Second)
	}
	if d.kubelet != nil {
		_ = d.kubelet.Stop()
	}
}

func (d *demo) register() error {
	d.say("Starting the device plugin: %s", strings.Join(d.spec.PluginArgv, " "))
	start := time.Now()
	var err error
	if d.plugin, err = harness.StartPlugin(d.spec.PluginArgv, d.spec.PluginEnv, d.spec.Verbose); err != nil {
		return err
	}
	err = harness.Wait(d.spec.Timeout, "the plugin to register", func() (bool, string, error) {
		if !d.plugin.Running() {
			return false, "", fmt.Errorf("plugin exited: %s", d.plugin.ExitError())
		}
		res := d.kubelet.Resources()
		if d.spec.Resource == "" {
			for name, r := range res {
				if r.Allocatable > 0 {
					d.spec.Resource = name
				}
			}
		}
		return d.spec.Resource != "" && res[d.spec.Resource].Allocatable > 0, fmt.Sprint(res), nil
	})
	if err != nil {
		return err
	}
	d.detail("After %v the plugin called Register on kubelet.sock for resource %q (API v1beta1).",
		time.Since(start).Round(time.Millisecond), d.spec.Resource)
	return d.describeOptions()
}

func (d *demo) describeOptions() error {
	socket, err := d.socket()
	if err != nil {
		return err
	}
	c, err := harness.DialPlugin(socket)
	if err != nil {
		return err
	}
	defer c.Close()
	opts, err := c.API.GetDevicePluginOptions(context.Background(), &pluginapi.Empty{})
	if err != nil {
		return fmt.Errorf("GetDevicePluginOptions: %w", err)
	}
	d.prefers = opts.GetPreferredAllocationAvailable
	d.detail("The kubelet connected back to the plugin's own socket, %s, and read its options:", socket)
	d.detail("  - call PreStartContainer before each container starts: %s", yesNo(opts.PreStartRequired))
	d.detail("  - ask the plugin which devices to pick (GetPreferredAllocation): %s", yesNo(opts.GetPreferredAllocationAvailable))
	return nil
}

func (d *demo) socket() (string, error) {
	var ids []string
	for _, dev := range d.kubelet.HealthyDevices(d.spec.Resource) {
		ids = append(ids, dev.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.spec.Timeout)
	defer cancel()
	return harness.FindPluginSocket(ctx, ids)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
