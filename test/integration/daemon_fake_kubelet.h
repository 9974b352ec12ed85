// FakeKubelet: the kubelet's side of device plugin registration, for the
// daemon integration tests. Serves v1beta1.Registration on
// <dir>/kubelet.sock and, like the real kubelet, checks the version and
// resource name and dials the plugin's endpoint inside Register, calling
// GetDevicePluginOptions before it answers. Start() first deletes every
// socket in the directory, as a restarting kubelet does.
//
// Thread safety: Start/Stop from the test thread; the accessors from any.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace gpulet::testing {

class FakeKubelet {
 public:
  explicit FakeKubelet(std::string dir) : dir_(std::move(dir)) {}
  ~FakeKubelet();

  // Deletes the sockets in the directory, then serves kubelet.sock.
  // Returns false if the server could not start.
  bool Start();
  // Stops serving and removes kubelet.sock.
  void Stop();
  void Restart() {
    Stop();
    Start();
  }

  std::string socket_path() const { return dir_ + "/kubelet.sock"; }
  // Registrations accepted so far (the plugin answered
  // GetDevicePluginOptions).
  std::vector<v1beta1::RegisterRequest> registrations() const;
  int registration_count() const;
  // Waits until at least `n` registrations were accepted.
  bool WaitForRegistrations(int n, absl::Duration timeout) const;
  // Why registrations were rejected, for failure messages.
  std::vector<std::string> rejections() const;

 private:
  // A fresh gRPC service per server, as gRPC services are not reused.
  class Service final : public v1beta1::Registration::Service {
   public:
    explicit Service(FakeKubelet& kubelet) : kubelet_(kubelet) {}
    grpc::Status Register(grpc::ServerContext*,
                          const v1beta1::RegisterRequest* request,
                          v1beta1::Empty*) override {
      return kubelet_.Register(*request);
    }

   private:
    FakeKubelet& kubelet_;
  };

  grpc::Status Register(const v1beta1::RegisterRequest& request);
  grpc::Status CheckPlugin(const v1beta1::RegisterRequest& request) const;

  const std::string dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  std::vector<v1beta1::RegisterRequest> registrations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> rejections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::testing
