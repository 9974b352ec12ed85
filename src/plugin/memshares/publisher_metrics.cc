#include "src/plugin/memshares/publisher_metrics.h"

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
      "Memory-share Node annotations that could not be read.", {"annotation"});
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

}  // namespace gpulet::nodeagent
