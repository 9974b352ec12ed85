#include "src/dra/dra_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "src/common/errors.h"
#include "src/common/logging.h"
#include "src/common/socket_path.h"
#include "src/common/status_macros.h"
#include "src/dra/dra_services.h"

namespace gpulet::dra {
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(1);

void RemoveSocket(const std::string& path) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    GPULET_LOG(WARNING)
        << common::ErrnoToStatus(errno, absl::StrCat("remove socket ", path))
               .message();
  }
}

}  // namespace

std::string RegistrationSocketName(const std::string& driver) {
  return absl::StrCat(driver, "-reg.sock");
}

class DraServer::Impl {
 public:
  Impl(DraServerOptions options, ClaimPreparer& preparer,
       DeviceHealthBoard& health)
      : options_(std::move(options)),
        reg_socket_(absl::StrCat(options_.registry_dir, "/",
                                 RegistrationSocketName(options_.driver))),
        dra_socket_(absl::StrCat(options_.plugin_dir, "/", kDraSocketName)),
        preparer_(preparer),
        health_(health) {}

  absl::Status Start() {
    absl::MutexLock lock(&mu_);
    if (server_ != nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("DRA driver ", options_.driver, " already served on ",
                       dra_socket_));
    }
    GPULET_RETURN_IF_ERROR(common::CheckSocketPath(
        options_.plugin_dir, kDraSocketName, dra_socket_));
    GPULET_RETURN_IF_ERROR(common::CheckSocketPath(
        options_.registry_dir, RegistrationSocketName(options_.driver),
        reg_socket_));
    GPULET_RETURN_IF_ERROR(common::RemoveStaleSocket(dra_socket_));
    GPULET_RETURN_IF_ERROR(common::RemoveStaleSocket(reg_socket_));
    registration_ = std::make_unique<RegistrationService>(
        options_.driver, dra_socket_, options_.on_registration);
    v1_ = std::make_unique<DraPluginService<V1>>(preparer_);
    v1beta1_ = std::make_unique<DraPluginService<V1beta1>>(preparer_);
    health_service_ = std::make_unique<HealthService>(options_.pool, health_);
    grpc::ServerBuilder builder;
    // The DRA socket first: once the registration socket exists the
    // kubelet may dial the DRA one.
    builder.AddListeningPort(absl::StrCat("unix:", dra_socket_),
                             grpc::InsecureServerCredentials());
    builder.AddListeningPort(absl::StrCat("unix:", reg_socket_),
                             grpc::InsecureServerCredentials());
    builder.RegisterService(registration_.get());
    builder.RegisterService(v1_.get());
    builder.RegisterService(v1beta1_.get());
    builder.RegisterService(health_service_.get());
    // Bound 0600 from the start (see PluginServer): only root may connect.
    const mode_t old_umask = ::umask(0177);
    server_ = builder.BuildAndStart();
    ::umask(old_umask);
    if (server_ == nullptr) {
      return absl::UnavailableError(absl::StrCat(
          "cannot serve DRA driver ", options_.driver, " on ", dra_socket_,
          " and ", reg_socket_, ": gRPC failed to listen (see its log above)"));
    }
    GPULET_LOG(INFO) << "serving DRA driver " << options_.driver << " on "
                     << dra_socket_ << ", registration on " << reg_socket_;
    return absl::OkStatus();
  }

  void Stop() {
    absl::MutexLock lock(&mu_);
    if (server_ == nullptr) return;
    // The registration socket goes first, so the kubelet's plugin watcher
    // sees the driver leave.
    RemoveSocket(reg_socket_);
    health_service_->Stop();
    server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    server_->Wait();
    server_.reset();
    registration_.reset();
    v1_.reset();
    v1beta1_.reset();
    health_service_.reset();
    RemoveSocket(dra_socket_);
    GPULET_LOG(INFO) << "stopped serving DRA driver " << options_.driver;
  }

  bool running() const {
    absl::MutexLock lock(&mu_);
    return server_ != nullptr;
  }

  const DraServerOptions options_;
  const std::string reg_socket_;
  const std::string dra_socket_;

 private:
  ClaimPreparer& preparer_;
  DeviceHealthBoard& health_;
  mutable absl::Mutex mu_;
  std::unique_ptr<RegistrationService> registration_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DraPluginService<V1>> v1_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DraPluginService<V1beta1>> v1beta1_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<HealthService> health_service_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
};

DraServer::DraServer(DraServerOptions options, ClaimPreparer& preparer,
                     DeviceHealthBoard& health)
    : impl_(std::make_unique<Impl>(std::move(options), preparer, health)) {}

DraServer::~DraServer() { Stop(); }

absl::Status DraServer::Start() { return impl_->Start(); }
void DraServer::Stop() { impl_->Stop(); }
bool DraServer::running() const { return impl_->running(); }
std::string DraServer::registration_socket() const { return impl_->reg_socket_; }
std::string DraServer::dra_socket() const { return impl_->dra_socket_; }

}  // namespace gpulet::dra
