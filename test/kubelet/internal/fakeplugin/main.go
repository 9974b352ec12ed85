package fakeplugin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Config describes what the fake plugin advertises.
type Config struct {
	Resource  string // extended resource name, e.g. example.com/gpu
	Devices   int    // number of devices
	Socket    string // socket file name inside Dir
	Dir       string // device plugin directory (the kubelet's)
	EnvName   string // env var that carries the allocated IDs
	NUMANodes int    // spread devices over this many NUMA nodes (0: no topology)
	PreStart  bool   // ask the kubelet to call PreStartContainer
	// When set, Allocate first takes the requested devices out of the list
	// it advertises, then answers only once this file exists (SIGUSR2 puts
	// them back): a device leaving the list while the kubelet's Allocate
	// call is in flight.
	DropOnAllocateUntil string
}

// DefaultConfig is what `kubelet-harness fake-plugin` runs with no flags.
func DefaultConfig() Config {
	return Config{
		Resource: "example.com/gpu", Devices: 4, Socket: "fake-gpu.sock",
		Dir: pluginapi.DevicePluginPath, EnvName: "EXAMPLE_VISIBLE_DEVICES", NUMANodes: 2,
	}
}

// pollInterval is how often the plugin looks at the directory. A real plugin
// would use inotify; polling keeps the fake small.
const pollInterval = 50 * time.Millisecond

// Main parses flags and runs the plugin until SIGINT/SIGTERM. Returns an exit code.
func Main(args []string) int {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("fake-plugin", flag.ContinueOnError)
	fs.StringVar(&cfg.Resource, "resource", cfg.Resource, "extended resource name to advertise")
	fs.IntVar(&cfg.Devices, "devices", cfg.Devices, "number of devices")
	fs.StringVar(&cfg.Socket, "socket", cfg.Socket, "socket file name inside -dir")
	fs.StringVar(&cfg.Dir, "dir", cfg.Dir, "kubelet device plugin directory")
	fs.StringVar(&cfg.EnvName, "env", cfg.EnvName, "environment variable that lists the allocated IDs")
	fs.IntVar(&cfg.NUMANodes, "numa", cfg.NUMANodes, "spread devices over this many NUMA nodes (0: no topology)")
	fs.BoolVar(&cfg.PreStart, "prestart", cfg.PreStart, "require PreStartContainer calls")
	fs.StringVar(&cfg.DropOnAllocateUntil, "drop-on-allocate-until", "",
		"Allocate takes the requested devices out of the list, then answers once this file exists")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := log.New(os.Stderr, "fake-plugin: ", log.Lmicroseconds)
	if err := Run(ctx, cfg, logger); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// Run serves and registers the plugin until ctx ends, starting over whenever
// its socket is deleted or the kubelet socket is replaced.
func Run(ctx context.Context, cfg Config, logger *log.Logger) error {
	svc := newService(cfg)
	health := make(chan os.Signal, 4)
	signal.Notify(health, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(health)
	go func() {
		for s := range health {
			if s == syscall.SIGUSR1 {
				logger.Print("SIGUSR1: marking one device unhealthy")
				svc.breakOne()
			} else {
				logger.Print("SIGUSR2: marking all devices healthy")
				svc.healAll()
			}
		}
	}()
	for ctx.Err() == nil {
		if err := serveOnce(ctx, cfg, svc, logger); err != nil {
			return err
		}
	}
	return nil
}

// serveOnce serves the socket, registers, and returns when the plugin must
// start over (nil) or cannot serve at all (error).
func serveOnce(ctx context.Context, cfg Config, svc *service, logger *log.Logger) error {
	path := filepath.Join(cfg.Dir, cfg.Socket)
	_ = os.Remove(path)
	lis, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	logger.Printf("serving %s (%d devices) on %s", cfg.Resource, cfg.Devices, path)

	kubeletIno, err := registerWithRetry(ctx, cfg, svc, path)
	if err != nil {
		return nil // ctx ended or our socket vanished: caller decides
	}
	logger.Printf("registered %s with the kubelet", cfg.Resource)
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			logger.Printf("%s was deleted: serving again and re-registering", path)
			return nil
		}
		if ino, ok := inode(filepath.Join(cfg.Dir, "kubelet.sock")); ok && ino != kubeletIno {
			logger.Print("kubelet.sock was recreated (kubelet restart): re-registering")
			return nil
		}
	}
}

// registerWithRetry registers until it succeeds and returns the inode of the
// kubelet socket it registered with.
func registerWithRetry(ctx context.Context, cfg Config, svc *service, ownPath string) (uint64, error) {
	kubelet := filepath.Join(cfg.Dir, "kubelet.sock")
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		if ino, ok := inode(kubelet); ok {
			if err := register(ctx, kubelet, cfg, svc); err == nil {
				return ino, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-ticker.C:
		}
		if _, err := os.Stat(ownPath); err != nil {
			return 0, err
		}
	}
}

func register(ctx context.Context, kubelet string, cfg Config, svc *service) error {
	conn, err := grpc.NewClient("unix://"+kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     cfg.Socket,
		ResourceName: cfg.Resource,
		Options:      svc.options(),
	})
	return err
}

func inode(path string) (uint64, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Ino, true
}
