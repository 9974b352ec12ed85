// plugin_peers_bench measures gpulet against reference servers in one run,
// with one client: the kubelet's own (grpc-go and k8s.io/kubelet's v1beta1
// stubs, dialled as the device manager dials). The servers:
//
//   - gpulet: `gpulet plugin` on the NVML simulator;
//   - grpc-go: go-device-plugin, the smallest Go plugin (a fixed Allocate
//     answer), the floor of any plugin written in Go;
//   - grpc-c++: grpc_floor_server, Debian's gRPC C++ with empty handlers,
//     the floor of the library gpulet is built on;
//   - nghttp2: h2_floor_server, gRPC over libnghttp2 in one epoll thread
//     with inline handlers, the floor of a plugin on its own transport;
//   - echo: unix_echo_server, one write and one read of the byte counts of
//     gpulet's Allocate exchange, the kernel's floor.
//
// It prints start -> Register of gpulet and the Go plugin (alternating
// starts), round trips of GetDevicePluginOptions and Allocate of one device
// (every server in round robin), each server's CPU per call, VmRSS and
// threads, with gpulet's ratio to the Go plugin and the targets of
// docs/benchmarks.md. Flags --benchmark_* are ignored (scripts/run-benchmarks
// passes them to every *_bench).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// Paths baked in by CMake (-ldflags -X); flags override them.
var (
	defaultGpulet   string
	defaultSimLib   string
	defaultGoPlugin string
	defaultFloor    string
	defaultEcho     string
	defaultH2Floor  string
)

type config struct {
	gpulet, simLib, goPlugin, floor, h2Floor, echo string
	machine, configFile, dir              string
	starts, samples                       int
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("plugin_peers_bench", flag.ContinueOnError)
	fs.StringVar(&cfg.gpulet, "gpulet", defaultGpulet, "the gpulet binary")
	fs.StringVar(&cfg.simLib, "nvml-lib", defaultSimLib, "the NVML simulator library")
	fs.StringVar(&cfg.goPlugin, "go-plugin", defaultGoPlugin, "the grpc-go reference plugin")
	fs.StringVar(&cfg.floor, "grpc-floor", defaultFloor, "the gRPC C++ reference server")
	fs.StringVar(&cfg.h2Floor, "h2-floor", defaultH2Floor, "the nghttp2 reference server")
	fs.StringVar(&cfg.echo, "echo", defaultEcho, "the unix-socket echo server")
	fs.StringVar(&cfg.machine, "machine", "dgx-h100", "simulator profile (GPULET_SIM_MACHINE)")
	fs.StringVar(&cfg.configFile, "config", "", "gpulet --config-file, e.g. time-slicing replicas")
	fs.StringVar(&cfg.dir, "dir", "", "scratch root (default /dev/shm, else the temp dir)")
	fs.IntVar(&cfg.starts, "starts", 12, "starts timed per plugin")
	fs.IntVar(&cfg.samples, "samples", 2000, "timed calls per case and server")
	fs.DurationVar(&registerTimeout, "wait", registerTimeout, "how long a server may take to register or get ready")
	var kept []string
	for _, a := range args {
		if !strings.HasPrefix(a, "--benchmark_") {
			kept = append(kept, a)
		}
	}
	if err := fs.Parse(kept); err != nil {
		return cfg, err
	}
	for name, path := range map[string]string{"--gpulet": cfg.gpulet, "--nvml-lib": cfg.simLib,
		"--go-plugin": cfg.goPlugin, "--grpc-floor": cfg.floor, "--h2-floor": cfg.h2Floor, "--echo": cfg.echo, "--config": cfg.configFile} {
		if path == "" && name != "--config" {
			return cfg, fmt.Errorf("%s: no path given", name)
		}
		if _, err := os.Stat(path); path != "" && err != nil {
			return cfg, fmt.Errorf("%s: %w", name, err)
		}
	}
	if cfg.starts < 1 || cfg.samples < 1 {
		return cfg, fmt.Errorf("--starts and --samples must be positive")
	}
	if cfg.dir == "" {
		cfg.dir = os.TempDir()
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			cfg.dir = "/dev/shm"
		}
	}
	if abs, err := filepath.Abs(cfg.configFile); err == nil && cfg.configFile != "" {
		cfg.configFile = abs
	}
	return cfg, nil
}

func grpcGoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == "google.golang.org/grpc" {
				return m.Version
			}
		}
	}
	return "?"
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "plugin_peers_bench: %v\n", err)
		os.Exit(2)
	}
	scratch, err := os.MkdirTemp(cfg.dir, "peers-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "plugin_peers_bench: %v\n", err)
		os.Exit(1)
	}
	defer os.RemoveAll(scratch)
	printMachine(cfg)
	rpcs, err := measureRpcs(cfg, scratch)
	if err != nil {
		fmt.Fprintf(os.Stderr, "plugin_peers_bench: RPC round trips: %v\n", err)
		os.RemoveAll(scratch)
		os.Exit(1)
	}
	starts, err := measureStarts(cfg, scratch, len(rpcs.devices))
	if err != nil {
		fmt.Fprintf(os.Stderr, "plugin_peers_bench: start -> Register: %v\n", err)
		os.RemoveAll(scratch)
		os.Exit(1)
	}
	printReport(cfg, starts, rpcs)
}
