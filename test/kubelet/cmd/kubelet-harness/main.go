// Command kubelet-harness runs the kubelet's own device manager code against
// a device plugin process.
//
//	kubelet-harness run [flags] <scenario>...|all [-- <plugin argv>]
//	kubelet-harness demo [flags] [-- <plugin argv>]
//	kubelet-harness soak --gpulet PATH --nvml-lib PATH [flags]
//	kubelet-harness list
//	kubelet-harness fake-plugin [flags]
//
// Without a plugin command line, run and demo use the built-in fake plugin.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gpulet.dev/test/kubelet/internal/fakeplugin"
	"gpulet.dev/test/kubelet/internal/mountns"
	"gpulet.dev/test/kubelet/scenario"
)

const usage = `usage:
  kubelet-harness run [flags] <scenario>...|all [-- <plugin command line>]
  kubelet-harness demo [flags] [-- <plugin command line>]
  kubelet-harness soak --gpulet PATH --nvml-lib PATH [flags]
  kubelet-harness list
  kubelet-harness fake-plugin [flags]

Runs the kubelet's device manager (k8s.io/kubernetes/pkg/kubelet/cm/devicemanager)
in a private mount namespace where /var/lib/kubelet/device-plugins is an empty
tmpfs, starts the plugin command line there, and checks what the kubelet sees.
Without a plugin command line the built-in fake plugin is used.
Run "kubelet-harness run -h" or "kubelet-harness demo -h" for flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	switch cmd {
	case "fake-plugin":
		os.Exit(fakeplugin.Main(args))
	case "list":
		for _, sc := range scenario.All() {
			fmt.Printf("%-16s %s\n", sc.Name, sc.Summary)
		}
		return
	case "run", "demo", "soak":
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err := mountns.Enter(); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet-harness:", err)
		os.Exit(1)
	}
	switch cmd {
	case "run":
		os.Exit(runMain(args))
	case "soak":
		os.Exit(soakMain(args))
	}
	os.Exit(demoMain(args))
}

// options are the flags run and demo share.
type options struct {
	spec    scenario.Spec
	verbose bool
}

func newFlags(name string, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.spec.Resource, "resource", "", "resource name the plugin must register (default: the fake's example.com/gpu)")
	fs.IntVar(&o.spec.Devices, "devices", 0, "number of devices it must advertise (default: the fake's 4)")
	fs.StringVar(&o.spec.EnvName, "env", "", "env var that must list the allocated device IDs (default: the fake's EXAMPLE_VISIBLE_DEVICES)")
	fs.StringVar(&o.spec.FaultCmd, "fault-cmd", "", "sh -c command that makes one device unhealthy; $PLUGIN_PID is set")
	fs.StringVar(&o.spec.RecoverCmd, "recover-cmd", "", "sh -c command that makes it healthy again")
	fs.IntVar(&o.spec.FaultDevices, "fault-devices", 0, "devices --fault-cmd makes unhealthy (default 1, or the number of --fault-ids)")
	fs.Func("fault-ids", "comma-separated device IDs --fault-cmd must make unhealthy, every other device staying healthy", func(v string) error {
		o.spec.FaultIDs = nil
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				o.spec.FaultIDs = append(o.spec.FaultIDs, id)
			}
		}
		return nil
	})
	fs.IntVar(&o.spec.KubeletRestarts, "restarts", 3, "kubelet restarts in the kubelet-restart scenario")
	fs.DurationVar(&o.spec.Timeout, "timeout", 20*time.Second, "limit for every wait")
	fs.IntVar(&o.spec.KubeletLogLevel, "kubelet-v", 0, "klog verbosity of the device manager")
	fs.Func("numa-nodes", "comma-separated NUMA node IDs of the machine (default 0-7)", func(v string) error {
		o.spec.NUMANodes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return err
			}
			o.spec.NUMANodes = append(o.spec.NUMANodes, n)
		}
		return nil
	})
	fs.Func("extra-resource", "another resource the plugin must register, as name=devices (repeatable)", func(v string) error {
		name, count, ok := strings.Cut(v, "=")
		n, err := strconv.Atoi(count)
		if !ok || err != nil || name == "" || n < 1 {
			return fmt.Errorf("expected name=devices, got %q", v)
		}
		if o.spec.ExtraResources == nil {
			o.spec.ExtraResources = map[string]int{}
		}
		o.spec.ExtraResources[name] = n
		return nil
	})
	fs.StringVar(&o.spec.ExtraEnvName, "extra-env", "", "env var that lists an extra resource's device, when not --env's; its containers must get neither --env's variable nor /dev/vfio nodes")
	fs.BoolVar(&o.spec.SharedLimit, "shared-limit", false, "the plugin refuses requests for more than one device (failRequestsGreaterThanOne)")
	fs.Func("strip-replicas", "compare --env entries with device IDs without their ::<replica> suffix (true/false)", func(v string) error {
		if v == "true" {
			o.spec.MapID = scenario.StripReplica
		}
		return nil
	})
	fs.Func("vfio", "the resource is a VFIO passthrough resource: each container gets /dev/vfio/vfio and a group node per device, no /dev/nvidia* (true/false)", func(v string) error {
		if v == "true" {
			o.spec.CheckRunOptions = scenario.CheckVfioRunOptions
		}
		return nil
	})
	fs.BoolVar(&o.verbose, "v", false, "print plugin output and kubelet log lines as they happen")
	return fs
}

// parse splits args at "--", parses flags and fills in the plugin command
// line (the fake plugin's, with its expectations, when none is given).
func parse(fs *flag.FlagSet, o *options, args []string) ([]string, error) {
	var argv []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, argv = args[:i], args[i+1:]
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		fake := fakeplugin.DefaultConfig()
		argv = []string{self, "fake-plugin"}
		setDefault(&o.spec.Resource, fake.Resource)
		setDefault(&o.spec.EnvName, fake.EnvName)
		setDefault(&o.spec.FaultCmd, "kill -USR1 $PLUGIN_PID")
		setDefault(&o.spec.RecoverCmd, "kill -USR2 $PLUGIN_PID")
		if o.spec.Devices == 0 {
			o.spec.Devices = fake.Devices
		}
	}
	o.spec.PluginArgv = argv
	if o.verbose {
		o.spec.Verbose = os.Stderr
	}
	return fs.Args(), nil
}

func setDefault(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// stdoutReporter prints scenario steps.
type stdoutReporter struct{ w io.Writer }

func (r stdoutReporter) Logf(format string, args ...any) { fmt.Fprintf(r.w, format+"\n", args...) }
