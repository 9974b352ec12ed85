package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// registerTimeout bounds every wait for a server (--wait): one that needs
// longer is broken, not slow, unless it runs under a tool such as valgrind.
var registerTimeout = 20 * time.Second

// fakeKubelet serves the Registration service on <dir>/kubelet.sock. Inside
// Register it dials the plugin back and asks for its options, as the kubelet
// does, then reports the registration's arrival on `registered`, with the
// CPU time the plugin (`pid`, once set) has used up to that moment.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	dir        string
	srv        *grpc.Server
	registered chan registration
	pid        atomic.Int64
}

type registration struct {
	endpoint string
	at       time.Time
	cpuMs    float64 // the plugin's CPU time when Register arrived; -1 if unknown
	err      error
}

func startKubelet(dir string) (*fakeKubelet, error) {
	k := &fakeKubelet{dir: dir, srv: grpc.NewServer(), registered: make(chan registration, 4)}
	lis, err := net.Listen("unix", k.socket())
	if err != nil {
		return nil, err
	}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(lis) }()
	return k, nil
}

func (k *fakeKubelet) socket() string { return filepath.Join(k.dir, "kubelet.sock") }

func (k *fakeKubelet) stop() { k.srv.Stop() }

func (k *fakeKubelet) Register(ctx context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	conn, err := dialPlugin(filepath.Join(k.dir, req.Endpoint), nil)
	if err == nil {
		_, err = pluginapi.NewDevicePluginClient(conn).GetDevicePluginOptions(ctx, &pluginapi.Empty{})
		conn.Close()
	}
	at := time.Now()
	// Read while the plugin still waits for this answer: nothing it does
	// after the registration (gpulet's topology read) counts.
	cpuMs := -1.0
	if pid := int(k.pid.Load()); pid > 0 {
		cpuMs = cpuMicrosBetween(nil, readThreadCPU(pid)) / 1000
	}
	k.registered <- registration{endpoint: req.Endpoint, at: at, cpuMs: cpuMs, err: err}
	return &pluginapi.Empty{}, err
}

// wait returns the next registration, or an error naming the plugin.
func (k *fakeKubelet) wait(p *process) (registration, error) {
	select {
	case r := <-k.registered:
		if r.err != nil {
			return r, fmt.Errorf("%s: dialling it back: %w\n%s", p.name, r.err, p.logTail())
		}
		return r, nil
	case <-p.exited:
		return registration{}, fmt.Errorf("%s exited before registering\n%s", p.name, p.logTail())
	case <-time.After(registerTimeout):
		return registration{}, fmt.Errorf("%s: no registration within %v\n%s", p.name, registerTimeout, p.logTail())
	}
}

// dialPlugin connects as the kubelet's device manager does: a unix socket
// through a context dialer, authority "localhost", no TLS. `counter`, when
// set, counts the connection's bytes.
func dialPlugin(path string, counter *byteCounter) (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///"+path,
		grpc.WithAuthority("localhost"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "unix", addr)
			if err != nil || counter == nil {
				return c, err
			}
			return &countingConn{Conn: c, counter: counter}, nil
		}))
}

// process is one child: a plugin or a reference server, its output in a
// log file in the scratch directory.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

func spawn(name string, argv []string, env []string, logPath string) (*process, time.Time, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, start, fmt.Errorf("start %s: %w", argv[0], err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, start, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits for the exit, then SIGKILL if it takes
// longer than registerTimeout.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(registerTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *process) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return "--- " + p.name + " log (tail)\n" + string(b)
}

// waitReady waits for a reference server's "ready" line in its log.
func (p *process) waitReady() error {
	deadline := time.Now().Add(registerTimeout)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(p.logPath)
		if len(b) >= 6 && string(b[:6]) == "ready\n" {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready\n%s", p.name, p.logTail())
		case <-time.After(time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready within %v\n%s", p.name, registerTimeout, p.logTail())
}
