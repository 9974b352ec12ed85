// go-device-plugin is the reference peer of plugin_peers_bench: the smallest
// device plugin grpc-go makes from k8s.io/kubelet's v1beta1 stubs, so the
// floor of any Go plugin. It serves a fixed list of devices, answers Allocate
// with one fixed environment variable per container, registers with the
// kubelet socket it is given and runs until SIGTERM or SIGINT.
//
//	go-device-plugin --kubelet-socket DIR/kubelet.sock [--socket NAME] [--devices N] [--resource NAME]
package main

import (
	"context"
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

// plugin implements the DevicePlugin service. Safe for concurrent use: every
// field is set before serving and only read afterwards.
type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices []*pluginapi.Device
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the list once and holds the stream open, as a plugin
// whose devices never change does.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": "all"},
		})
	}
	return resp, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func register(kubelet, socket, resource string) error {
	conn, err := grpc.NewClient("unix://"+kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     socket,
		ResourceName: resource,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	return err
}

func run() error {
	kubelet := flag.String("kubelet-socket", pluginapi.KubeletSocket, "the kubelet's registration socket; the plugin's socket goes in its directory")
	socket := flag.String("socket", "go-device-plugin.sock", "socket file name")
	devices := flag.Int("devices", 8, "devices advertised")
	resource := flag.String("resource", "example.com/gpu", "extended resource name")
	flag.Parse()
	if *devices < 1 {
		return fmt.Errorf("--devices %d: need at least one device", *devices)
	}
	p := &plugin{}
	for i := 0; i < *devices; i++ {
		p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprintf("dev-%d", i), Health: pluginapi.Healthy})
	}
	path := filepath.Join(filepath.Dir(*kubelet), *socket)
	_ = os.Remove(path)
	lis, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer srv.Stop()
	if err := register(*kubelet, *socket, *resource); err != nil {
		return fmt.Errorf("register with %s: %w", *kubelet, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	select {
	case <-ctx.Done():
		return nil
	case err := <-served:
		return err
	}
}

func main() {
	if err := run(); err != nil {
		log.SetFlags(0)
		log.Fatalf("go-device-plugin: %v", err)
	}
}
