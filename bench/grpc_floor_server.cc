// grpc_floor_server: the reference gRPC C++ server of plugin_peers_bench.
// It serves v1beta1.DevicePlugin on a unix socket with Debian's gRPC (the
// unsecure build gpulet links) through the sync API with its defaults, and
// answers with constants: GetDevicePluginOptions an empty message, Allocate
// one fixed environment variable per container. So it is the floor of a
// plugin built on this gRPC: the library, the socket and the scheduler, no
// plugin logic.
//
//   grpc_floor_server <socket-path>
// Prints "ready" once serving; runs until SIGTERM or SIGINT.
#include <grpcpp/grpcpp.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace {

class FloorService final : public v1beta1::DevicePlugin::Service {
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*,
                                      const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*,
                        const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override {
    for (int i = 0; i < request->container_requests_size(); ++i) {
      (*response->add_container_responses()
            ->mutable_envs())["NVIDIA_VISIBLE_DEVICES"] = "all";
    }
    return grpc::Status::OK;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: grpc_floor_server <socket-path>\n", stderr);
    return 2;
  }
  // Blocked before any gRPC thread starts, so every thread inherits the mask
  // and sigwait below receives the signal.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const std::string path = argv[1];
  ::unlink(path.c_str());
  FloorService service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    std::fprintf(stderr, "grpc_floor_server: cannot listen on %s\n",
                 path.c_str());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  int received = 0;
  sigwait(&stop_signals, &received);
  server->Shutdown();
  ::unlink(path.c_str());
  return 0;
}
