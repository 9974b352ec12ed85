#include "src/dra/runner/claim_status_writer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/logging.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "src/dra/kubelet/claim_status.h"
#include "src/net/kube/api_path.h"

namespace gpulet::daemon {
namespace {

absl::StatusOr<std::string> ClaimPath(const dra::ClaimRef& ref) {
  if (absl::Status s =
          kube::ValidateName("claim namespace", ref.namespace_name);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = kube::ValidateName("claim name", ref.name); !s.ok()) {
    return s;
  }
  return absl::StrCat("/apis/resource.k8s.io/v1/namespaces/",
                      ref.namespace_name, "/resourceclaims/", ref.name);
}

}  // namespace

ClaimStatusWriter::ClaimStatusWriter(kube::Client& client, std::string driver,
                                     std::string pool, device::Node node,
                                     const metrics::DraMetrics* metrics)
    : client_(client),
      driver_(std::move(driver)),
      pool_(std::move(pool)),
      node_(std::move(node)),
      metrics_(metrics) {
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

ClaimStatusWriter::~ClaimStatusWriter() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.request_stop();
  thread_.join();
}

void ClaimStatusWriter::Set(const dra::ClaimRef& ref,
                            const std::vector<dra::PreparedDevice>& devices,
                            const nlohmann::json& read) {
  nlohmann::json entries = dra::DeviceStatusEntries(driver_, node_, devices);
  absl::MutexLock lock(&mu_);
  Job& job = jobs_[ref.uid];
  job.ref = ref;
  job.entries = std::move(entries);
  job.read = read;
  job.not_before = absl::InfinitePast();
  job.backoff.Reset();
  job.version = ++next_version_;
}

size_t ClaimStatusWriter::Pending() const {
  absl::MutexLock lock(&mu_);
  return jobs_.size();
}

bool ClaimStatusWriter::NextJob(Job& out) {
  absl::MutexLock lock(&mu_);
  for (;;) {
    if (stopping_) return false;
    absl::Time due = absl::InfiniteFuture();
    auto next = jobs_.end();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (it->second.not_before < due) {
        due = it->second.not_before;
        next = it;
      }
    }
    const absl::Time now = common::RealClock::Get().Now();
    if (next != jobs_.end() && due <= now) {
      out = next->second;
      return true;
    }
    const uint64_t seen = next_version_;
    auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || next_version_ != seen;
    };
    mu_.AwaitWithTimeout(
        absl::Condition(&changed),
        next == jobs_.end() ? absl::InfiniteDuration() : due - now);
  }
}

ClaimStatusWriter::Outcome ClaimStatusWriter::Write(const Job& job,
                                                    std::stop_token stop) {
  absl::StatusOr<std::string> path = ClaimPath(job.ref);
  if (!path.ok()) return Outcome::kRefused;
  absl::StatusOr<nlohmann::json> claim =
      job.read.is_object() ? absl::StatusOr<nlohmann::json>(job.read)
                           : client_.Get(*path, stop);
  if (absl::IsNotFound(claim.status())) return Outcome::kGone;
  if (!claim.ok()) {
    GPULET_LOG(WARNING) << "dra: read claim " << dra::ClaimName(job.ref)
                        << " for its status: " << claim.status().message();
    return Outcome::kRetry;
  }
  if ((*claim)["metadata"].value("uid", "") != job.ref.uid) {
    return Outcome::kGone;
  }
  std::optional<nlohmann::json> devices =
      dra::MergedDeviceStatus(*claim, driver_, pool_, job.entries);
  if (!devices.has_value()) return Outcome::kWritten;
  absl::StatusOr<nlohmann::json> patched = client_.MergePatch(
      *path + "/status", dra::DeviceStatusPatch(*claim, *devices), stop);
  if (patched.ok()) return Outcome::kWritten;
  GPULET_LOG(WARNING) << "dra: write status.devices of claim "
                      << dra::ClaimName(job.ref) << ": "
                      << patched.status().message();
  if (absl::IsNotFound(patched.status())) return Outcome::kGone;
  if (absl::IsInvalidArgument(patched.status())) return Outcome::kRefused;
  return Outcome::kRetry;
}

void ClaimStatusWriter::Finish(const Job& job, Outcome outcome) {
  const char* result = outcome == Outcome::kWritten ? metrics::kResultOk
                       : outcome == Outcome::kGone  ? metrics::kResultGone
                                                    : metrics::kResultError;
  if (metrics_ != nullptr) metrics_->status_writes->Add({result});
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job.ref.uid);
  // A newer Set for the claim came in meanwhile: that one is written next.
  if (it == jobs_.end() || it->second.version != job.version) return;
  if (outcome != Outcome::kRetry) {
    jobs_.erase(it);
    return;
  }
  // What was read may be stale now (a conflict): read it again.
  it->second.read = nullptr;
  it->second.not_before =
      common::RealClock::Get().Now() + it->second.backoff.Next();
}

void ClaimStatusWriter::Run(std::stop_token stop) {
  Job job;
  while (NextJob(job)) {
    const Outcome outcome = Write(job, stop);
    if (stop.stop_requested()) return;
    Finish(job, outcome);
  }
}

}  // namespace gpulet::daemon
