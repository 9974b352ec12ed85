package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"gpulet.dev/test/kubelet/internal/mountns"
)

// PluginClient talks to a plugin's socket directly, bypassing the kubelet's
// checks, to send requests the kubelet never would (unknown IDs, ...).
type PluginClient struct {
	Socket string
	API    pluginapi.DevicePluginClient
	conn   *grpc.ClientConn
}

// DialPlugin connects to a plugin socket (path, or name inside the plugin dir).
func DialPlugin(socket string) (*PluginClient, error) {
	if !filepath.IsAbs(socket) {
		socket = filepath.Join(mountns.Dir, socket)
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", socket, err)
	}
	return &PluginClient{Socket: socket, API: pluginapi.NewDevicePluginClient(conn), conn: conn}, nil
}

// Close closes the connection.
func (c *PluginClient) Close() error { return c.conn.Close() }

// FirstList opens a ListAndWatch stream and returns its first message's
// devices (one more watcher besides the kubelet: plugins must allow several).
func (c *PluginClient) FirstList(ctx context.Context) ([]*pluginapi.Device, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.API.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	return resp.Devices, nil
}

// FindPluginSocket finds the socket in the plugin dir that serves the given
// device IDs: the device plugin API does not say which socket serves which
// resource, so every socket other than kubelet.sock is asked for its devices.
func FindPluginSocket(ctx context.Context, wantIDs []string) (string, error) {
	entries, err := os.ReadDir(mountns.Dir)
	if err != nil {
		return "", err
	}
	want := slices.Sorted(slices.Values(wantIDs))
	var seen []string
	for _, e := range entries {
		if e.Name() == "kubelet.sock" || e.Type()&os.ModeSocket == 0 {
			continue
		}
		ids, err := listIDs(ctx, e.Name())
		if err != nil {
			seen = append(seen, fmt.Sprintf("%s (%v)", e.Name(), err))
			continue
		}
		if slices.Equal(ids, want) {
			return e.Name(), nil
		}
		seen = append(seen, fmt.Sprintf("%s (%d other devices)", e.Name(), len(ids)))
	}
	return "", fmt.Errorf("no socket in %s serves devices %v; sockets: %v", mountns.Dir, want, seen)
}

func listIDs(ctx context.Context, socket string) ([]string, error) {
	c, err := DialPlugin(socket)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	devs, err := c.FirstList(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(devs))
	for _, d := range devs {
		ids = append(ids, d.ID)
	}
	sort.Strings(ids)
	return ids, nil
}
