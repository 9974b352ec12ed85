// Package h2wire judges gpulet's own gRPC transport (src/net/h2) with grpc-go,
// the kubelet's gRPC implementation: h2_test_server (H2_TEST_SERVER, set by
// ctest's h2_grpc_go test) is started on a unix socket and called as the
// kubelet's device manager dials a plugin. The harness's self-test leaves
// these tests out (they need the C++ server).
package h2wire

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
)

// rawCodec passes messages as the bytes they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

type server struct {
	cmd    *exec.Cmd
	socket string
	done   chan error
}

func startServer(t *testing.T) *server {
	t.Helper()
	bin := os.Getenv("H2_TEST_SERVER")
	if bin == "" {
		t.Fatal("H2_TEST_SERVER is not set (ctest's h2_grpc_go test sets it)")
	}
	dir, err := os.MkdirTemp("", "h2w-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &server{socket: filepath.Join(dir, "s.sock"), done: make(chan error, 1)}
	s.cmd = exec.Command(bin, s.socket)
	s.cmd.Stderr = os.Stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		t.Fatalf("h2_test_server did not get ready: %q %v", line, err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
	})
	return s
}

func (s *server) dial(t *testing.T) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///localhost",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", s.socket)
		}),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func echo(ctx context.Context, conn *grpc.ClientConn, method, in string, opts ...grpc.CallOption) (string, error) {
	req := []byte(in)
	var resp []byte
	err := conn.Invoke(ctx, method, &req, &resp, opts...)
	return string(resp), err
}

func openStream(ctx context.Context, t *testing.T, conn *grpc.ClientConn, req string) grpc.ClientStream {
	t.Helper()
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/test.T/Stream")
	if err != nil {
		t.Fatal(err)
	}
	b := []byte(req)
	if err := st.SendMsg(&b); err != nil {
		t.Fatal(err)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestH2UnaryErrorsAndUnknownMethods(t *testing.T) {
	conn := startServer(t).dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got, err := echo(ctx, conn, "/test.T/Echo", "hello"); err != nil || got != "hello" {
		t.Fatalf("Echo = %q, %v", got, err)
	}
	_, err := echo(ctx, conn, "/test.T/Echo", "err:bad «id» 100%")
	if s := status.Convert(err); s.Code() != codes.InvalidArgument || s.Message() != "bad «id» 100%" {
		t.Fatalf("error = %v", err)
	}
	_, err = echo(ctx, conn, "/test.T/Nope", "")
	if s := status.Convert(err); s.Code() != codes.Unimplemented || !strings.Contains(s.Message(), "/test.T/Nope") {
		t.Fatalf("unknown method = %v", err)
	}
	_, err = echo(ctx, conn, "/test.T/Echo", strings.Repeat("x", 4096), grpc.UseCompressor(gzip.Name))
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("compressed = %v", err)
	}
	_, err = echo(ctx, conn, "/test.T/Echo", strings.Repeat("x", 5<<20))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("5 MiB = %v", err)
	}
}

func TestH2LargeStreamAndManyCalls(t *testing.T) {
	conn := startServer(t).dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := openStream(ctx, t, conn, "4,1000000")
	for i := 0; i < 4; i++ {
		var m []byte
		if err := st.RecvMsg(&m); err != nil || len(m) != 1000000 {
			t.Fatalf("message %d: %d bytes, %v", i, len(m), err)
		}
	}
	var m []byte
	if err := st.RecvMsg(&m); !errors.Is(err, io.EOF) {
		t.Fatalf("after the messages: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if got, err := echo(ctx, conn, "/test.T/Echo", "ping"); err != nil || got != "ping" {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Echo: %v", err)
	}
}

func TestH2DeadlineCancelAndGoaway(t *testing.T) {
	s := startServer(t)
	conn := s.dial(t)
	// Connected first, so that the deadline below bounds the stream and not
	// the dial (which a loaded machine can stretch past it).
	warm, warmCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer warmCancel()
	if _, err := echo(warm, conn, "/test.T/Echo", "hello"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st := openStream(ctx, t, conn, "-1,10")
	var m []byte
	if err := st.RecvMsg(&m); err != nil {
		t.Fatal(err)
	}
	if err := st.RecvMsg(&m); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("after the deadline: %v", err)
	}

	cctx, ccancel := context.WithCancel(context.Background())
	st = openStream(cctx, t, conn, "-1,10")
	if err := st.RecvMsg(&m); err != nil {
		t.Fatal(err)
	}
	ccancel()
	if err := st.RecvMsg(&m); status.Code(err) != codes.Canceled {
		t.Fatalf("after cancel: %v", err)
	}

	// Stop (SIGTERM): the open stream ends with OK, then the server exits.
	st = openStream(context.Background(), t, conn, "-1,10")
	if err := st.RecvMsg(&m); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := st.RecvMsg(&m); !errors.Is(err, io.EOF) {
		t.Fatalf("stream on stop: %v, want a clean end", err)
	}
}
