#include "src/plugin/memshares/publisher_reports.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "src/base/common/logging.h"
#include "src/model/sharing/pack.h"

namespace gpulet::nodeagent {

void PublisherReports::CountSync(bool ok) {
  if (metrics_.syncs != nullptr) metrics_.syncs->Add({ok ? "ok" : "error"});
}

void PublisherReports::CountPlacementWrite(std::string_view result) {
  if (metrics_.placement_writes != nullptr) {
    metrics_.placement_writes->Add({std::string(result)});
  }
}

void PublisherReports::BadAnnotation(std::string_view annotation,
                                     const absl::Status& status) {
  if (metrics_.annotation_errors != nullptr) {
    metrics_.annotation_errors->Add({std::string(annotation)});
  }
  absl::MutexLock lock(&mu_);
  std::string& last = bad_[std::string(annotation)];
  if (last == status.message()) return;
  last = std::string(status.message());
  GPULET_LOG(WARNING) << "memory shares: ignoring an unreadable node "
                         "annotation: "
                      << status.message();
}

void PublisherReports::SetUnits(const sharing::NodeMemory& node,
                                const std::vector<sharing::Request>& pending) {
  if (metrics_.memory_units == nullptr) return;
  absl::MutexLock lock(&mu_);
  std::vector<int64_t> pending_units(node.gpus.size(), 0);
  if (absl::StatusOr<std::vector<int>> placed =
          sharing::Pack(node.gpus, pending);
      placed.ok()) {
    for (size_t i = 0; i < pending.size(); ++i) {
      pending_units[(*placed)[i]] += pending[i].units;
    }
  }
  std::vector<std::string> now;
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    const std::string& uuid = node.gpus[g].uuid;
    metrics_.memory_units->Set({uuid, "total"},
                               static_cast<double>(node.gpus[g].units));
    metrics_.memory_units->Set({uuid, "used"},
                               static_cast<double>(node.gpus[g].used));
    metrics_.memory_units->Set({uuid, "pending"},
                               static_cast<double>(pending_units[g]));
    now.push_back(uuid);
  }
  for (const std::string& old : metric_gpus_) {
    if (std::find(now.begin(), now.end(), old) == now.end()) {
      metrics_.memory_units->RemoveMatching("gpu", old);
    }
  }
  metric_gpus_ = std::move(now);
}

}  // namespace gpulet::nodeagent
