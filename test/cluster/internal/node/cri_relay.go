package node

// The node's containerd (Debian's 1.6) predates CRI's CDIDevices field
// (containerd 1.7 reads it): it drops the CDI devices the kubelet asks for
// on behalf of a DRA driver. In DRA mode the kubelet therefore talks to
// containerd through this relay, which forwards every CRI call as it is,
// except that a CreateContainer's CDI devices are also written as a
// `cdi.k8s.io/` annotation, the other way CDI devices reach a runtime
// (containerd 1.7+ turns both into the same CDI injection). containerd
// passes that annotation on (container_annotations, set by `gpulet runtime
// configure`) and gpulet-runtime injects the devices from the claim's spec
// in /var/run/cdi.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRIRelaySocket is where the kubelet reaches containerd in DRA mode.
const CRIRelaySocket = "/run/gpulet-cri/cri.sock"

// CDIAnnotation is the annotation the relay writes a container's CDI
// devices into.
const CDIAnnotation = "cdi.k8s.io/gpulet-cluster-dra"

const createContainer = "/runtime.v1.RuntimeService/CreateContainer"

// frame is one gRPC message, left encoded.
type frame struct{ b []byte }

// rawCodec moves messages without decoding them. Named "proto" so that it
// serves the content type both sides use.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("cri relay: cannot marshal %T", v)
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("cri relay: cannot unmarshal into %T", v)
	}
	f.b = append([]byte(nil), data...)
	return nil
}

type criRelay struct {
	server   *grpc.Server
	upstream *grpc.ClientConn
}

// startCRIRelay serves CRI on listen and forwards it to the runtime's
// socket upstream until stop.
func startCRIRelay(listen, upstream string) (*criRelay, error) {
	conn, err := grpc.NewClient("unix://"+upstream,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}),
			grpc.MaxCallRecvMsgSize(16<<20), grpc.MaxCallSendMsgSize(16<<20)))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dirOf(listen), 0755); err != nil {
		conn.Close()
		return nil, err
	}
	_ = os.Remove(listen)
	ln, err := net.Listen("unix", listen)
	if err != nil {
		conn.Close()
		return nil, err
	}
	r := &criRelay{upstream: conn}
	r.server = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}),
		grpc.MaxRecvMsgSize(16<<20), grpc.MaxSendMsgSize(16<<20),
		grpc.UnknownServiceHandler(r.relay))
	go func() { _ = r.server.Serve(ln) }()
	return r, nil
}

func dirOf(p string) string { return p[:strings.LastIndex(p, "/")] }

func (r *criRelay) stop() {
	r.server.Stop()
	r.upstream.Close()
}

// relay forwards one call, unary or streaming, both ways.
func (r *criRelay) relay(_ any, in grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(in)
	if !ok {
		return errors.New("cri relay: no method")
	}
	md, _ := metadata.FromIncomingContext(in.Context())
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(in.Context(), md.Copy()))
	defer cancel()
	out, err := r.upstream.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	go func() {
		for {
			var f frame
			if err := in.RecvMsg(&f); err != nil {
				if err == io.EOF {
					_ = out.CloseSend()
				} else {
					cancel()
				}
				return
			}
			if method == createContainer {
				if b, err := withCDIAnnotation(f.b); err == nil {
					f.b = b
				}
			}
			if err := out.SendMsg(&f); err != nil {
				return
			}
		}
	}()
	if h, err := out.Header(); err == nil {
		_ = in.SendHeader(h)
	}
	for {
		var f frame
		if err := out.RecvMsg(&f); err != nil {
			in.SetTrailer(out.Trailer())
			if err == io.EOF {
				return nil
			}
			return err
		}
		if err := in.SendMsg(&f); err != nil {
			return err
		}
	}
}

// withCDIAnnotation adds CDIAnnotation, naming the request's CDI devices,
// to an encoded CreateContainerRequest that has any.
func withCDIAnnotation(b []byte) ([]byte, error) {
	var req runtimeapi.CreateContainerRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return nil, err
	}
	cfg := req.GetConfig()
	if cfg == nil || len(cfg.CDIDevices) == 0 {
		return b, nil
	}
	var names []string
	for _, d := range cfg.CDIDevices {
		names = append(names, d.Name)
	}
	if cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	cfg.Annotations[CDIAnnotation] = strings.Join(names, ",")
	return proto.Marshal(&req)
}
