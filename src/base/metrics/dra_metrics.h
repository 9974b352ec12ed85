// DraMetrics: the metric families of `gpulet dra` (docs/metrics.md), all
// registered here so their names, help texts, labels and buckets cannot
// diverge between the parts that update them (the claim observer, the
// slice publisher, the claim-status writer). The health monitor's families
// are GpuletMetrics::RegisterHealth's.
//
// A DraMetrics holds borrowed pointers into a Registry; copy it freely, the
// registry must outlive every copy. Thread safety: the families are
// thread-safe (registry.h).
#pragma once

#include "absl/status/statusor.h"
#include "src/base/metrics/registry.h"

namespace gpulet::metrics {

// Label values of gpulet_dra_devices{state}.
inline constexpr char kDeviceStateHealthy[] = "healthy";
inline constexpr char kDeviceStateTainted[] = "tainted";
inline constexpr char kDeviceStateWithheld[] = "withheld";
// Label value of gpulet_dra_claim_status_writes_total{result} for a claim
// that was gone (deleted, recreated) when its status was written.
inline constexpr char kResultGone[] = "gone";

struct DraMetrics {
  // gpulet_dra_prepares_total{result}: claims answered by
  // NodePrepareResources, "ok" or "error".
  Family* prepares = nullptr;
  // gpulet_dra_unprepares_total{result}: claims answered by
  // NodeUnprepareResources.
  Family* unprepares = nullptr;
  // gpulet_dra_prepare_duration_seconds: one NodePrepareResources call,
  // every claim of it (claims read from the API server included).
  Family* prepare_seconds = nullptr;
  // gpulet_dra_unprepare_duration_seconds: one NodeUnprepareResources call.
  Family* unprepare_seconds = nullptr;
  // gpulet_dra_devices{state}: the pool's devices as last published:
  // "healthy", "tainted" (published with a taint) or "withheld" (unhealthy,
  // left out).
  Family* devices = nullptr;
  // gpulet_dra_slice_publishes_total{result}: attempts to bring the
  // ResourceSlices up to date, "ok" or "error".
  Family* slice_publishes = nullptr;
  // gpulet_dra_claim_status_writes_total{result}: writes of a claim's
  // status.devices, "ok", "error" (tried again) or "gone".
  Family* status_writes = nullptr;

  // Registers every family (idempotent on the same registry), the counters'
  // samples at 0.
  static absl::StatusOr<DraMetrics> Register(Registry& registry);
};

// Buckets of the prepare and unprepare durations, in seconds: from a claim
// answered from the checkpoint to the kubelet's 45 s deadline.
inline constexpr double kDraCallBuckets[] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 45};

}  // namespace gpulet::metrics
