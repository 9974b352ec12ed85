#include "src/dra/runner/dra_slices.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/common/backoff.h"
#include "src/base/common/logging.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "src/dra/slices/publisher.h"

namespace gpulet::daemon {
namespace {

constexpr common::BackoffPolicy kRetry{.initial = absl::Milliseconds(100),
                                       .max = absl::Seconds(10)};

bool SameTaints(const draslice::SliceOptions& a,
                const draslice::SliceOptions& b) {
  return a.taint_unhealthy == b.taint_unhealthy &&
         a.unhealthy_effect == b.unhealthy_effect &&
         a.lost_effect == b.lost_effect;
}

}  // namespace

DraSlices::DraSlices(kube::Client& client, dra::DeviceHealthBoard& board,
                     draslice::NodeDevices devices,
                     draslice::SliceOptions options,
                     const metrics::DraMetrics* metrics)
    : client_(client),
      board_(board),
      devices_(std::move(devices)),
      metrics_(metrics),
      node_name_(options.node_name),
      options_(std::move(options)) {
  subscription_ =
      board_.Subscribe([this](const std::vector<dra::DeviceHealth>&) {
        absl::MutexLock lock(&mu_);
        dirty_ = true;
      });
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

DraSlices::~DraSlices() {
  board_.Unsubscribe(subscription_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.request_stop();
  thread_.join();
}

int64_t DraSlices::published() const {
  absl::MutexLock lock(&mu_);
  return published_;
}

void DraSlices::SetUnhealthyDevices(const config::Dra& dra) {
  absl::MutexLock lock(&mu_);
  draslice::SliceOptions next = options_;
  draslice::ApplyUnhealthyDevices(dra, next);
  if (SameTaints(next, options_)) return;
  options_ = std::move(next);
  dirty_ = true;
}

void DraSlices::Count(const absl::Status& status,
                      const draslice::SliceOptions& options) const {
  if (metrics_ == nullptr) return;
  metrics_->slice_publishes->Add(
      {status.ok() ? metrics::kResultOk : metrics::kResultError});
  if (!status.ok()) return;
  const draslice::DeviceCounts counts =
      draslice::CountDevices(devices_, options);
  metrics_->devices->Set({metrics::kDeviceStateHealthy},
                         static_cast<double>(counts.healthy));
  metrics_->devices->Set({metrics::kDeviceStateTainted},
                         static_cast<double>(counts.tainted));
  metrics_->devices->Set({metrics::kDeviceStateWithheld},
                         static_cast<double>(counts.withheld));
}

bool DraSlices::WaitForWork(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return dirty_ || stopping_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (stopping_) return false;
  dirty_ = false;
  return true;
}

absl::StatusOr<std::string> DraSlices::NodeUid(std::stop_token stop) {
  absl::StatusOr<nlohmann::json> node =
      client_.Get(absl::StrCat("/api/v1/nodes/", node_name_), stop);
  if (!node.ok()) return node.status();
  const nlohmann::json& uid = (*node)["metadata"]["uid"];
  if (!uid.is_string() || uid.get<std::string>().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Node ", node_name_, " has no metadata.uid"));
  }
  return uid.get<std::string>();
}

void DraSlices::Run(std::stop_token stop) {
  common::Backoff backoff(kRetry);
  absl::StatusOr<std::string> uid = NodeUid(stop);
  while (!uid.ok()) {
    GPULET_LOG(WARNING) << "dra: get Node " << node_name_
                        << " for the ResourceSlices' owner: "
                        << uid.status().message();
    {
      // Only a stop ends this wait early; health changes wait for the UID.
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), backoff.Next());
      if (stopping_) return;
    }
    uid = NodeUid(stop);
  }
  draslice::SliceOptions options;
  std::unique_ptr<draslice::Publisher> publisher;
  backoff.Reset();
  absl::Duration wait = absl::InfiniteDuration();
  while (WaitForWork(wait)) {
    {
      absl::MutexLock lock(&mu_);
      if (!publisher || !SameTaints(options, options_)) {
        options = options_;
        options.node_uid = *uid;
        publisher = std::make_unique<draslice::Publisher>(client_, options);
      }
    }
    devices_.unhealthy = board_.Unhealthy();
    devices_.faults = board_.Faults();
    const absl::Status status = publisher->Publish(devices_, stop);
    if (stop.stop_requested()) return;
    Count(status, options);
    if (!status.ok()) {
      GPULET_LOG(WARNING) << "dra: publish ResourceSlices of " << node_name_
                          << ": " << status.message();
      // Tried again after the backoff, or at once on a health change.
      wait = backoff.Next();
      continue;
    }
    backoff.Reset();
    wait = absl::InfiniteDuration();
    absl::MutexLock lock(&mu_);
    if (published_ != publisher->generation()) {
      GPULET_LOG(INFO) << "dra: ResourceSlices of " << node_name_
                       << " at generation " << publisher->generation() << ", "
                       << devices_.unhealthy.size() << " devices "
                       << (options.taint_unhealthy ? "tainted" : "left out")
                       << " as unhealthy";
    }
    published_ = publisher->generation();
  }
}

}  // namespace gpulet::daemon
