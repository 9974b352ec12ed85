#include "src/dra/runner/claim_reporter.h"

#include <set>

#include "src/base/metrics/gpulet_metrics.h"

namespace gpulet::daemon {
namespace {

const char* ResultLabel(const absl::Status& status) {
  return status.ok() ? metrics::kResultOk : metrics::kResultError;
}

}  // namespace

void ClaimReporter::Prepared(
    const std::vector<dra::ClaimRef>& claims,
    const std::map<std::string, dra::PrepareResult>& results,
    absl::Duration took) {
  if (metrics_ != nullptr) {
    metrics_->prepare_seconds->Observe({}, absl::ToDoubleSeconds(took));
  }
  std::set<std::string> seen;
  for (const dra::ClaimRef& ref : claims) {
    auto it = results.find(ref.uid);
    if (it == results.end() || !seen.insert(ref.uid).second) continue;
    const dra::PrepareResult& result = it->second;
    if (metrics_ != nullptr) {
      metrics_->prepares->Add({ResultLabel(result.status)});
    }
    // Only claims this call prepared: a claim answered from the checkpoint
    // is not read again for its status (the kubelet asks again often).
    if (status_ != nullptr && result.status.ok() && !result.claim.is_null()) {
      status_->Set(ref, result.devices, result.claim);
    }
  }
}

void ClaimReporter::Unprepared(
    const std::vector<dra::ClaimRef>& claims,
    const std::map<std::string, absl::Status>& results, absl::Duration took) {
  if (metrics_ != nullptr) {
    metrics_->unprepare_seconds->Observe({}, absl::ToDoubleSeconds(took));
  }
  std::set<std::string> seen;
  for (const dra::ClaimRef& ref : claims) {
    auto it = results.find(ref.uid);
    if (it == results.end() || !seen.insert(ref.uid).second) continue;
    if (metrics_ != nullptr)
      metrics_->unprepares->Add({ResultLabel(it->second)});
    if (status_ != nullptr && it->second.ok()) status_->Set(ref, {});
  }
}

}  // namespace gpulet::daemon
