package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// byteCounter counts what a connection read and wrote.
type byteCounter struct{ read, written atomic.Int64 }

type countingConn struct {
	net.Conn
	counter *byteCounter
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.counter.read.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.counter.written.Add(int64(n))
	return n, err
}

// target is one timed case on one server: a cell of the report.
type target struct {
	server string
	kase   string
	pid    int
	call   func(i int) error
}

// grpcServer is a client of one gRPC server under test: one connection, as
// the kubelet keeps one per plugin, and the ListAndWatch stream on it when
// the server is a plugin.
type grpcServer struct {
	name    string
	pid     int
	conn    *grpc.ClientConn
	client  pluginapi.DevicePluginClient
	cancel  context.CancelFunc
	devices []string // from the first ListAndWatch message
}

func connect(name string, pid int, path string, stream bool) (*grpcServer, error) {
	conn, err := dialPlugin(path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &grpcServer{name: name, pid: pid, conn: conn, client: pluginapi.NewDevicePluginClient(conn), cancel: func() {}}
	if !stream {
		return s, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	lw, err := s.client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err == nil {
		var first *pluginapi.ListAndWatchResponse
		if first, err = lw.Recv(); err == nil {
			for _, d := range first.Devices {
				s.devices = append(s.devices, d.ID)
			}
			// The stream stays open; later messages are not read, as none
			// is expected while nothing changes.
		}
	}
	if err != nil {
		s.close()
		return nil, fmt.Errorf("%s: ListAndWatch: %w", name, err)
	}
	return s, nil
}

func (s *grpcServer) close() {
	s.cancel()
	s.conn.Close()
}

// allocateRequests is one request per device: one container asking for that
// one device, as the kubelet sends for a pod with one GPU.
func allocateRequests(ids []string) []*pluginapi.AllocateRequest {
	reqs := make([]*pluginapi.AllocateRequest, len(ids))
	for i, id := range ids {
		reqs[i] = &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{id}}}}
	}
	return reqs
}

// The kubelet calls Allocate without a deadline (context.Background()).
func (s *grpcServer) targets(reqs []*pluginapi.AllocateRequest) []*target {
	return []*target{
		{server: s.name, kase: caseOptions, pid: s.pid, call: func(int) error {
			_, err := s.client.GetDevicePluginOptions(context.Background(), &pluginapi.Empty{})
			return err
		}},
		{server: s.name, kase: caseAllocate, pid: s.pid, call: func(i int) error {
			resp, err := s.client.Allocate(context.Background(), reqs[i%len(reqs)])
			if err == nil && len(resp.ContainerResponses) != 1 {
				err = fmt.Errorf("Allocate answered %d containers, want 1", len(resp.ContainerResponses))
			}
			return err
		}},
	}
}

// exchangeBytes is what one Allocate of reqs[0] moves over a fresh
// connection to `path` (client to server, server to client), averaged over
// many calls after a warm-up, so HTTP/2's occasional frames count pro rata.
func exchangeBytes(path string, reqs []*pluginapi.AllocateRequest) (int, int, error) {
	counter := &byteCounter{}
	conn, err := dialPlugin(path, counter)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	client := pluginapi.NewDevicePluginClient(conn)
	const warmup, calls = 50, 500
	var in, out int64
	for i := 0; i < warmup+calls; i++ {
		if i == warmup {
			in, out = counter.written.Load(), counter.read.Load()
		}
		if _, err := client.Allocate(context.Background(), reqs[i%len(reqs)]); err != nil {
			return 0, 0, err
		}
	}
	w := (counter.written.Load() - in + calls/2) / calls
	r := (counter.read.Load() - out + calls/2) / calls
	return int(w), int(r), nil
}

// echoTarget writes `in` bytes to unix_echo_server and reads `out` back: the
// kernel's floor for one exchange of those sizes.
func echoTarget(name string, pid int, path string, in, out int) (*target, func(), error) {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	header := make([]byte, 8)
	binary.LittleEndian.PutUint32(header[0:], uint32(in))
	binary.LittleEndian.PutUint32(header[4:], uint32(out))
	if _, err := conn.Write(header); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	req := make([]byte, in)
	resp := make([]byte, out)
	t := &target{server: name, kase: caseAllocate, pid: pid, call: func(int) error {
		if _, err := conn.Write(req); err != nil {
			return err
		}
		_, err := io.ReadFull(conn, resp)
		return err
	}}
	return t, func() { conn.Close() }, nil
}

// roundRobin calls every target once per round, `warmup` untimed rounds
// then `samples` timed ones, so a burst of load from other processes hits
// every server alike. Returns microseconds per call, per target.
func roundRobin(targets []*target, warmup, samples int) (map[*target][]float64, error) {
	out := map[*target][]float64{}
	for round := 0; round < warmup+samples; round++ {
		for _, t := range targets {
			start := time.Now()
			if err := t.call(round); err != nil {
				return nil, fmt.Errorf("%s, %s: %w", t.server, t.kase, err)
			}
			if round >= warmup {
				out[t] = append(out[t], float64(time.Since(start).Nanoseconds())/1000)
			}
		}
	}
	return out, nil
}

// cpuPerCall is the server's CPU microseconds per call over `n` calls of
// one target in a row: from the threads' schedstat (exact) when every
// thread lived through the block, else from the process's utime + stime,
// which counts exited threads too but in 10 ms ticks (gRPC C++'s sync
// server ends and starts threads as load changes). `coarse` says which.
func cpuPerCall(t *target, n int) (us float64, coarse bool, err error) {
	before := readThreadCPU(t.pid)
	beforeTotal := processCPUMicros(t.pid)
	for i := 0; i < n; i++ {
		if err := t.call(i); err != nil {
			return 0, false, fmt.Errorf("%s, %s: %w", t.server, t.kase, err)
		}
	}
	after := readThreadCPU(t.pid)
	if sameThreads(before, after) {
		return cpuMicrosBetween(before, after) / float64(n), false, nil
	}
	return (processCPUMicros(t.pid) - beforeTotal) / float64(n), true, nil
}
