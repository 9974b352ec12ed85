// FakeKubelet: the kubelet's side of device plugin registration, for the
// daemon integration tests. Serves v1beta1.Registration on
// <dir>/kubelet.sock and, like the real kubelet, checks the version and
// resource name and dials the plugin's endpoint inside Register, calling
// GetDevicePluginOptions before it answers; then, like the kubelet's
// device manager, keeps a ListAndWatch stream open to every plugin it
// registered until that stream ends or the kubelet stops. Start() first
// deletes every socket in the directory, as a restarting kubelet does.
//
// Thread safety: Start/Stop from the test thread; the accessors from any.
#pragma once

#include <memory>
#include <string>
#include <thread>
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
  // Waits until the stream of registration `n` (1: the first) has
  // received its first list.
  bool WaitWatching(int n, absl::Duration timeout) const;
  // Lists received on the stream of registration `n`; -1 if it has none.
  int lists_received(int n) const;
  // Cancels the stream of the latest registration, as the kubelet's device
  // manager does to a client it disconnects; false when it has none open.
  bool DropLatestWatch();

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

  // One registration's ListAndWatch stream, read on a thread of its own.
  struct Watch {
    grpc::ClientContext context;
    int lists = 0;       // guarded by the kubelet's mu_
    bool ended = false;  // guarded by the kubelet's mu_
    std::thread thread;
  };

  grpc::Status Register(const v1beta1::RegisterRequest& request);
  grpc::Status CheckPlugin(const v1beta1::RegisterRequest& request) const;
  // Counts the registration and opens its stream.
  void StartWatch(const v1beta1::RegisterRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);
  void ReadWatch(Watch& watch, const std::string& endpoint);
  void EndWatches() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  std::vector<v1beta1::RegisterRequest> registrations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> rejections_ ABSL_GUARDED_BY(mu_);
  // By registration (same index as registrations_); null once Stop ended
  // them.
  std::vector<std::unique_ptr<Watch>> watches_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::testing
