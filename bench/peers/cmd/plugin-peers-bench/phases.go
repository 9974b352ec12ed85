package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Server (column) and case (row) names of the report.
const (
	serverGpulet = "gpulet"
	serverGo     = "grpc-go"
	serverCpp    = "grpc-c++"
	serverH2     = "nghttp2"
	serverEcho   = "echo"
	caseOptions  = "GetDevicePluginOptions"
	caseAllocate = "Allocate 1 device"
)

// warmupRounds untimed rounds of every case come before the timed ones.
const warmupRounds = 50

// noSysfs keeps gpulet off the host's /sys (the simulator is the node).
const noSysfs = "/nonexistent/gpulet-bench-sysfs"

// gpuletEnv is this process's environment without anything that would point
// gpulet elsewhere, plus the simulator's machine profile.
func gpuletEnv(cfg config) []string {
	var env []string
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		switch name {
		case "GPULET_SIM_SOCKET", "GPULET_NVML_LIB", "NVIDIA_DRIVER_ROOT", "GPULET_SIM_MACHINE",
			"KUBELET_SOCKET", "FAIL_ON_INIT_ERROR", "DP_DISABLE_HEALTHCHECKS", "DP_ENABLE_HEALTHCHECKS":
			continue
		}
		env = append(env, e)
	}
	return append(env, "GPULET_SIM_MACHINE="+cfg.machine)
}

// pluginKind says how to start one of the two registering plugins.
type pluginKind struct {
	name string
	argv func(kubeletSocket string) []string
	env  []string
}

func kinds(cfg config, devices int) []pluginKind {
	return []pluginKind{
		{name: serverGpulet, env: gpuletEnv(cfg), argv: func(sock string) []string {
			argv := []string{cfg.gpulet, "--nvml-lib", cfg.simLib, "--sysfs-root", noSysfs,
				"plugin", "--kubelet-socket", sock}
			if cfg.configFile != "" {
				argv = append(argv, "--config-file", cfg.configFile)
			}
			return argv
		}},
		{name: serverGo, env: os.Environ(), argv: func(sock string) []string {
			return []string{cfg.goPlugin, "--kubelet-socket", sock, "--devices", strconv.Itoa(devices)}
		}},
	}
}

// registered is a plugin started in a fresh directory of its own, with its
// own fake kubelet, and registered.
type registered struct {
	proc    *process
	kubelet *fakeKubelet
	dir     string
	socket  string        // the plugin's endpoint
	took    time.Duration // spawn to the registration accepted
	cpuMs   float64       // the plugin's CPU time by then (every thread), -1 if unknown
}

func startRegistered(kind pluginKind, root string) (*registered, error) {
	dir, err := os.MkdirTemp(root, kind.name+"-")
	if err != nil {
		return nil, err
	}
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		return nil, err
	}
	k, err := startKubelet(plugins)
	if err != nil {
		return nil, err
	}
	p, start, err := spawn(kind.name, kind.argv(k.socket()), kind.env, filepath.Join(dir, "log"))
	if err != nil {
		k.stop()
		return nil, err
	}
	k.pid.Store(int64(p.pid()))
	r, err := k.wait(p)
	if err != nil {
		p.stop()
		k.stop()
		return nil, err
	}
	return &registered{proc: p, kubelet: k, dir: dir, socket: filepath.Join(plugins, r.endpoint),
		took: r.at.Sub(start), cpuMs: r.cpuMs}, nil
}

func (r *registered) stop() {
	r.proc.stop()
	r.kubelet.stop()
	_ = os.RemoveAll(r.dir)
}

// startFigures are milliseconds per start, per plugin: from spawn to the
// accepted registration, and the CPU time the plugin used by then (which,
// unlike the first, does not grow while it waits for a CPU).
type startFigures struct {
	wallMs map[string][]float64
	cpuMs  map[string][]float64
}

// measureStarts starts each plugin cfg.starts times, alternating.
func measureStarts(cfg config, root string, devices int) (startFigures, error) {
	out := startFigures{wallMs: map[string][]float64{}, cpuMs: map[string][]float64{}}
	for i := 0; i < cfg.starts; i++ {
		for _, kind := range kinds(cfg, devices) {
			r, err := startRegistered(kind, root)
			if err != nil {
				return out, err
			}
			out.wallMs[kind.name] = append(out.wallMs[kind.name], float64(r.took.Microseconds())/1000)
			if r.cpuMs >= 0 {
				out.cpuMs[kind.name] = append(out.cpuMs[kind.name], r.cpuMs)
			}
			r.stop()
		}
	}
	return out, nil
}

type rpcResults struct {
	devices   []string
	bytesIn   int // one Allocate exchange with gpulet, client to server
	bytesOut  int // and back
	latencyUs map[string]map[string][]float64
	cpuUs     map[string]map[string]float64
	rssMiB    map[string]float64 // once up (plugins: registered, stream open)
	threads   map[string]int     // after the calls, idle again
	coarseCPU []string           // CPU figures from utime + stime (threads ended)
}

// referenceServer starts grpc_floor_server, h2_floor_server or unix_echo_server on `path`
// and waits for its "ready" line.
func referenceServer(name, binary, path, root string) (*process, error) {
	p, _, err := spawn(name, []string{binary, path}, os.Environ(), filepath.Join(root, name+".log"))
	if err != nil {
		return nil, err
	}
	if err := p.waitReady(); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func measureRpcs(cfg config, root string) (*rpcResults, error) {
	res := &rpcResults{latencyUs: map[string]map[string][]float64{}, cpuUs: map[string]map[string]float64{},
		rssMiB: map[string]float64{}, threads: map[string]int{}}
	k := kinds(cfg, 0)
	gp, err := startRegistered(k[0], root)
	if err != nil {
		return nil, err
	}
	defer gp.stop()
	g, err := connect(serverGpulet, gp.proc.pid(), gp.socket, true)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, gp.proc.logTail())
	}
	defer g.close()
	res.devices = g.devices
	if len(res.devices) == 0 {
		return nil, fmt.Errorf("gpulet advertised no devices\n%s", gp.proc.logTail())
	}
	goKind := kinds(cfg, len(res.devices))[1]
	rp, err := startRegistered(goKind, root)
	if err != nil {
		return nil, err
	}
	defer rp.stop()
	gr, err := connect(serverGo, rp.proc.pid(), rp.socket, true)
	if err != nil {
		return nil, err
	}
	defer gr.close()
	floorProc, err := referenceServer(serverCpp, cfg.floor, filepath.Join(root, "floor.sock"), root)
	if err != nil {
		return nil, err
	}
	defer floorProc.stop()
	fl, err := connect(serverCpp, floorProc.pid(), filepath.Join(root, "floor.sock"), false)
	if err != nil {
		return nil, err
	}
	defer fl.close()
	h2Proc, err := referenceServer(serverH2, cfg.h2Floor, filepath.Join(root, "h2.sock"), root)
	if err != nil {
		return nil, err
	}
	defer h2Proc.stop()
	h2, err := connect(serverH2, h2Proc.pid(), filepath.Join(root, "h2.sock"), false)
	if err != nil {
		return nil, err
	}
	defer h2.close()
	for _, s := range []*grpcServer{g, gr, fl, h2} {
		res.rssMiB[s.name] = vmRSSMiB(s.pid)
	}

	reqs := allocateRequests(res.devices)
	if res.bytesIn, res.bytesOut, err = exchangeBytes(gp.socket, reqs); err != nil {
		return nil, fmt.Errorf("gpulet: counting bytes: %w", err)
	}
	echoProc, err := referenceServer(serverEcho, cfg.echo, filepath.Join(root, "echo.sock"), root)
	if err != nil {
		return nil, err
	}
	defer echoProc.stop()
	echo, closeEcho, err := echoTarget(serverEcho, echoProc.pid(), filepath.Join(root, "echo.sock"), res.bytesIn, res.bytesOut)
	if err != nil {
		return nil, err
	}
	defer closeEcho()
	res.rssMiB[serverEcho] = vmRSSMiB(echoProc.pid())

	var targets []*target
	for _, s := range []*grpcServer{g, gr, fl, h2} {
		targets = append(targets, s.targets(reqs)...)
	}
	targets = append(targets, echo)
	lat, err := roundRobin(targets, warmupRounds, cfg.samples)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if res.latencyUs[t.server] == nil {
			res.latencyUs[t.server] = map[string][]float64{}
			res.cpuUs[t.server] = map[string]float64{}
		}
		res.latencyUs[t.server][t.kase] = lat[t]
		var coarse bool
		if res.cpuUs[t.server][t.kase], coarse, err = cpuPerCall(t, cfg.samples); err != nil {
			return nil, err
		}
		if coarse {
			res.coarseCPU = append(res.coarseCPU, t.server+" "+t.kase)
		}
	}
	for _, t := range targets {
		res.threads[t.server] = threadCount(t.pid)
	}
	return res, nil
}
