// PublisherMetrics: the metric families of memory shares' node side
// (docs/sharing.md#metrics), registered once and updated by MemoryPublisher
// through PublisherReports.
//
// Thread safety: a plain value; the families are thread-safe.
#pragma once

#include "absl/status/statusor.h"
#include "src/base/metrics/registry.h"

namespace gpulet::nodeagent {

// Metric families the publisher updates; null ones are skipped.
struct PublisherMetrics {
  // gpulet_gpu_memory_units{gpu, state}: total, used, pending.
  metrics::Family* memory_units = nullptr;
  // gpulet_memory_annotation_errors_total{annotation}: "pending", "node".
  metrics::Family* annotation_errors = nullptr;
  // gpulet_memory_syncs_total{result}: "ok", "error".
  metrics::Family* syncs = nullptr;
  // gpulet_memory_placement_writes_total{result}: "ok", "error", "timeout".
  metrics::Family* placement_writes = nullptr;

  // Registers the four families (idempotent on the same registry).
  static absl::StatusOr<PublisherMetrics> Register(metrics::Registry& registry);
};

}  // namespace gpulet::nodeagent
