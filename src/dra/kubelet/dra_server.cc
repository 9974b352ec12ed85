#include "src/dra/kubelet/dra_server.h"

#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/base/common/socket_path.h"
#include "src/base/common/status_macros.h"
#include "src/dra/kubelet/dra_services.h"
#include "src/net/h2/server.h"

namespace gpulet::dra {
namespace {

void RemoveSocket(const std::string& path) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    GPULET_LOG(WARNING) << common::ErrnoToStatus(
                               errno, absl::StrCat("remove socket ", path))
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
    if (dra_server_ != nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "DRA driver ", options_.driver, " already served on ", dra_socket_));
    }
    GPULET_RETURN_IF_ERROR(common::CheckSocketPath(
        options_.plugin_dir, kDraSocketName, dra_socket_));
    GPULET_RETURN_IF_ERROR(common::CheckSocketPath(
        options_.registry_dir, RegistrationSocketName(options_.driver),
        reg_socket_));
    GPULET_RETURN_IF_ERROR(common::RemoveStaleSocket(dra_socket_));
    GPULET_RETURN_IF_ERROR(common::RemoveStaleSocket(reg_socket_));
    // The DRA socket first: once the registration socket exists the
    // kubelet may dial the DRA one. h2::Server binds both 0600: only root
    // (the kubelet) may connect.
    dra_server_ = std::make_unique<h2::Server>();
    workers_ = std::make_unique<h2::CallWorkers>(options_.driver, kDraWorkers,
                                                 kDraMaxQueued);
    if (absl::Status s = dra_server_->Start(
            dra_socket_,
            DraMethods(preparer_, health_, options_.pool, *workers_));
        !s.ok()) {
      dra_server_.reset();
      workers_.reset();
      return Unavailable(s);
    }
    h2::Server* dra = dra_server_.get();
    subscription_ = health_.Subscribe(
        [dra](const std::vector<DeviceHealth>&) { dra->WakeStreams(); });
    reg_server_ = std::make_unique<h2::Server>();
    if (absl::Status s = reg_server_->Start(
            reg_socket_, RegistrationMethods(options_.driver, dra_socket_,
                                             options_.on_registration));
        !s.ok()) {
      reg_server_.reset();
      StopLocked();
      return Unavailable(s);
    }
    GPULET_LOG(INFO) << "serving DRA driver " << options_.driver << " on "
                     << dra_socket_ << ", registration on " << reg_socket_;
    return absl::OkStatus();
  }

  void Stop() {
    absl::MutexLock lock(&mu_);
    if (dra_server_ == nullptr) return;
    StopLocked();
    GPULET_LOG(INFO) << "stopped serving DRA driver " << options_.driver;
  }

  bool running() const {
    absl::MutexLock lock(&mu_);
    return dra_server_ != nullptr;
  }

  const DraServerOptions options_;
  const std::string reg_socket_;
  const std::string dra_socket_;

 private:
  absl::Status Unavailable(const absl::Status& s) const {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve DRA driver ", options_.driver, ": ", s.message()));
  }

  void StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // The registration socket goes first, so the kubelet's plugin watcher
    // sees the driver leave.
    RemoveSocket(reg_socket_);
    if (reg_server_ != nullptr) reg_server_->Stop();
    reg_server_.reset();
    // No wake-up may reach the DRA server once it stops: Unsubscribe
    // returns after any listener call in progress.
    health_.Unsubscribe(subscription_);
    dra_server_->Stop();
    dra_server_.reset();
    // Claim reads in flight are stopped; the threads are joined.
    workers_.reset();
    RemoveSocket(dra_socket_);
  }

  ClaimPreparer& preparer_;
  DeviceHealthBoard& health_;
  mutable absl::Mutex mu_;
  std::unique_ptr<h2::Server> reg_server_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<h2::Server> dra_server_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<h2::CallWorkers> workers_ ABSL_GUARDED_BY(mu_);
  int subscription_ ABSL_GUARDED_BY(mu_) = 0;
};

DraServer::DraServer(DraServerOptions options, ClaimPreparer& preparer,
                     DeviceHealthBoard& health)
    : impl_(std::make_unique<Impl>(std::move(options), preparer, health)) {}

DraServer::~DraServer() { Stop(); }

absl::Status DraServer::Start() { return impl_->Start(); }
void DraServer::Stop() { impl_->Stop(); }
bool DraServer::running() const { return impl_->running(); }
std::string DraServer::registration_socket() const {
  return impl_->reg_socket_;
}
std::string DraServer::dra_socket() const { return impl_->dra_socket_; }

}  // namespace gpulet::dra
