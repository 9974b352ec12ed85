#include "src/plugin/plugin_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "src/common/errors.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "src/common/logging.h"
#include "src/common/socket_path.h"
#include "src/plugin/device_plugin_service.h"

namespace gpulet::plugin {

using pluginapi::AllocateHandler;
using pluginapi::DeviceSnapshot;
using pluginapi::PreferredHandler;

namespace {

// In-flight unary calls get this long once Stop() begins; streams end at
// once because the service is stopped first.
constexpr auto kShutdownGrace = std::chrono::seconds(1);

// `allocate`, reporting each success to `on_allocated` when there is one.
AllocateHandler Counted(AllocateHandler allocate,
                        std::function<void(size_t)> on_allocated) {
  if (!on_allocated || !allocate) return allocate;
  return [allocate = std::move(allocate),
          on_allocated = std::move(on_allocated)](
             const DeviceSnapshot& snapshot,
             const std::vector<std::string>& ids)
             -> absl::StatusOr<v1beta1::ContainerAllocateResponse> {
    absl::StatusOr<v1beta1::ContainerAllocateResponse> response =
        allocate(snapshot, ids);
    if (response.ok()) on_allocated(ids.size());
    return response;
  };
}

}  // namespace

class PluginServer::Impl {
 public:
  Impl(PluginOptions options, DeviceList& devices, AllocateHandler allocate,
       PreferredHandler preferred)
      : options_(std::move(options)),
        devices_(devices),
        allocate_(Counted(std::move(allocate), options_.on_allocated)),
        preferred_(std::move(preferred)) {}

  absl::Status Start(const std::string& plugin_dir);
  void Stop();
  bool running() const {
    absl::MutexLock lock(&mu_);
    return server_ != nullptr;
  }

  const PluginOptions options_;
  std::string socket_path_;

 private:
  absl::Status Serve() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  DeviceList& devices_;
  const AllocateHandler allocate_;
  const PreferredHandler preferred_;
  mutable absl::Mutex mu_;
  // One run: a fresh service per Start, so a stopped one never serves.
  std::unique_ptr<DevicePluginService> service_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
};

absl::Status PluginServer::Impl::Start(const std::string& plugin_dir) {
  absl::MutexLock lock(&mu_);
  const std::string path = absl::StrCat(plugin_dir, "/", options_.socket_name);
  if (server_ != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(options_.resource_name, " is already served on ",
                     socket_path_, "; cannot start on ", path));
  }
  socket_path_ = path;
  if (absl::Status s =
          common::CheckSocketPath(plugin_dir, options_.socket_name, path);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = common::RemoveStaleSocket(path); !s.ok()) return s;
  return Serve();
}

absl::Status PluginServer::Impl::Serve() {
  service_ = std::make_unique<DevicePluginService>(options_, devices_,
                                                   allocate_, preferred_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", socket_path_),
                           grpc::InsecureServerCredentials());
  service_->AddTo(builder);
  // The socket is bound 0600 (0777 & ~0177) so there is no moment in which
  // anyone but root may connect. umask is per process: no other gpulet
  // thread creates files without setting their mode explicitly
  // (WriteFileAtomic fchmods), so the short change is safe.
  const mode_t old_umask = ::umask(0177);
  server_ = builder.BuildAndStart();
  ::umask(old_umask);
  if (server_ == nullptr) {
    service_->Shutdown();
    service_.reset();
    return absl::UnavailableError(absl::StrCat(
        "cannot serve ", options_.resource_name, " on ", socket_path_,
        ": gRPC failed to listen (see its log above)"));
  }
  service_->Start();
  // Only the kubelet (root) may talk to the plugin; already so since the
  // bind, made explicit in case the socket was created otherwise.
  if (chmod(socket_path_.c_str(), 0600) != 0) {
    absl::Status status =
        common::ErrnoToStatus(errno, absl::StrCat("chmod 0600 ", socket_path_));
    StopLocked();
    return status;
  }
  GPULET_LOG(INFO) << "serving " << options_.resource_name << " on "
                   << socket_path_;
  return absl::OkStatus();
}

void PluginServer::Impl::Stop() {
  absl::MutexLock lock(&mu_);
  StopLocked();
}

void PluginServer::Impl::StopLocked() {
  if (server_ == nullptr) return;
  service_->Stop();
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_->Wait();
  // The server first, then its completion queue (gRPC's order).
  service_->Shutdown();
  server_.reset();
  service_.reset();
  if (unlink(socket_path_.c_str()) != 0 && errno != ENOENT) {
    const absl::Status status = common::ErrnoToStatus(
        errno, absl::StrCat("remove socket ", socket_path_));
    GPULET_LOG(WARNING) << status.message();
  }
  GPULET_LOG(INFO) << "stopped serving " << options_.resource_name << " on "
                   << socket_path_;
}

PluginServer::PluginServer(PluginOptions options, DeviceList& devices,
                           AllocateHandler allocate, PreferredHandler preferred)
    : impl_(std::make_unique<Impl>(std::move(options), devices,
                                   std::move(allocate), std::move(preferred))) {
}

PluginServer::~PluginServer() { Stop(); }

absl::Status PluginServer::Start(const std::string& plugin_dir) {
  return impl_->Start(plugin_dir);
}

void PluginServer::Stop() { impl_->Stop(); }

bool PluginServer::running() const { return impl_->running(); }

const PluginOptions& PluginServer::options() const { return impl_->options_; }

const std::string& PluginServer::socket_path() const {
  return impl_->socket_path_;
}

}  // namespace gpulet::plugin
