// MemoryPublisher's metrics (docs/sharing.md#metrics).
#include <algorithm>
#include <string>
#include <vector>

#include "src/plugin/memshares/memory_publisher.h"

namespace gpulet::nodeagent {

absl::StatusOr<PublisherMetrics> PublisherMetrics::Register(
    metrics::Registry& registry) {
  PublisherMetrics m;
  absl::StatusOr<metrics::Family*> units = registry.AddGauge(
      "gpulet_gpu_memory_units",
      "Memory units of each GPU sharing memory: total, used (allocated), "
      "pending (bound pods not admitted yet, as packed).",
      {"gpu", "state"});
  if (!units.ok()) return units.status();
  absl::StatusOr<metrics::Family*> errors = registry.AddCounter(
      "gpulet_memory_annotation_errors_total",
      "Memory-share Node annotations that could not be read.",
      {"annotation"});
  if (!errors.ok()) return errors.status();
  absl::StatusOr<metrics::Family*> syncs = registry.AddCounter(
      "gpulet_memory_syncs_total",
      "Syncs of the memory-share Node annotations, by result.", {"result"});
  if (!syncs.ok()) return syncs.status();
  absl::StatusOr<metrics::Family*> writes = registry.AddCounter(
      "gpulet_memory_placement_writes_total",
      "Allocate answers recorded on the Node before answering, by result "
      "(ok, error, timeout).",
      {"result"});
  if (!writes.ok()) return writes.status();
  m.placement_writes = *writes;
  m.memory_units = *units;
  m.annotation_errors = *errors;
  m.syncs = *syncs;
  return m;
}

void MemoryPublisher::UpdateMetrics(
    const sharing::NodeMemory& node,
    const std::vector<sharing::Request>& pending) {
  if (metrics_.memory_units == nullptr) return;
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
