#include "src/plugin/server/plugin_server.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/base/common/socket_path.h"
#include "src/net/h2/server.h"
#include "src/plugin/server/device_plugin_service.h"

namespace gpulet::plugin {

using pluginapi::AllocateHandler;
using pluginapi::DeviceSnapshot;
using pluginapi::PreferredHandler;

namespace {

// `allocate`, reporting each success to `on_allocated` when there is one.
AllocateHandler Counted(AllocateHandler allocate,
                        std::function<void(size_t)> on_allocated) {
  if (!on_allocated || !allocate) return allocate;
  return
      [allocate = std::move(allocate), on_allocated = std::move(on_allocated)](
          const DeviceSnapshot& snapshot, const std::vector<std::string>& ids)
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
  uint64_t run() const {
    absl::MutexLock lock(&mu_);
    return runs_;
  }
  int open_streams() const {
    absl::MutexLock lock(&mu_);
    return service_ != nullptr ? service_->open_streams() : 0;
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
  std::unique_ptr<h2::CallWorkers> workers_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<h2::Server> server_ ABSL_GUARDED_BY(mu_);
  uint64_t runs_ ABSL_GUARDED_BY(mu_) = 0;
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
  const uint64_t run = runs_ + 1;
  service_ = std::make_unique<DevicePluginService>(options_, devices_,
                                                   allocate_, preferred_, run);
  server_ = std::make_unique<h2::Server>();
  if (options_.handlers_wait) {
    workers_ = std::make_unique<h2::CallWorkers>(options_.resource_name,
                                                 kWorkers, kMaxQueued);
  }
  // h2::Server binds the socket 0600, so only root (the kubelet) may ever
  // connect.
  if (absl::Status s = server_->Start(
          socket_path_, service_->Methods(*server_, workers_.get()));
      !s.ok()) {
    server_.reset();
    workers_.reset();
    service_.reset();
    return absl::UnavailableError(
        absl::StrCat("cannot serve ", options_.resource_name, " on ",
                     socket_path_, ": ", s.message()));
  }
  // Made explicit in case the socket was created otherwise.
  if (chmod(socket_path_.c_str(), 0600) != 0) {
    absl::Status status =
        common::ErrnoToStatus(errno, absl::StrCat("chmod 0600 ", socket_path_));
    StopLocked();
    return status;
  }
  runs_ = run;
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
  // Ends every stream (OK), sends GOAWAY and joins the loop; the streams'
  // sources, which borrow the service, are gone when it returns. Their end
  // is ours, not the kubelet's (on_unwatched).
  service_->Stopping();
  server_->Stop();
  server_.reset();
  // The handlers' waits are stopped and the threads joined before the
  // service they borrow goes.
  workers_.reset();
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

uint64_t PluginServer::run() const { return impl_->run(); }

int PluginServer::open_streams() const { return impl_->open_streams(); }

const PluginOptions& PluginServer::options() const { return impl_->options_; }

const std::string& PluginServer::socket_path() const {
  return impl_->socket_path_;
}

}  // namespace gpulet::plugin
