// The opaque configuration of our driver in a claim's allocation
// (claim_allocation.h's OpaqueConfig), in the shape NVIDIA's DRA driver
// takes, so claims written for it keep working:
//   apiVersion: resource.nvidia.com/v1beta1
//   kind: GpuConfig | MigDeviceConfig
//   sharing:
//     strategy: TimeSlicing | MPS
//     timeSlicingConfig: {interval: Default | Short | Medium | Long}
//     mpsConfig: {defaultActiveThreadPercentage: 1..100}
// Later configurations override earlier ones (class first, then claim), as
// in NVIDIA's driver. MPS's active-thread percentage becomes
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE in the claim's CDI devices; the rest
// (the GPU's time-slice, the claim's MPS control daemon) is applied through
// the SharingApplier (sharing_applier.h).
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/dra/kubelet/claim_allocation.h"

namespace gpulet::dra {

struct ClaimSharing {
  std::string strategy;  // "", "TimeSlicing", "MPS"
  std::string interval;  // TimeSlicing's, "" when not given
  std::optional<int> active_thread_percentage;  // MPS's

  // "KEY=value" entries the claim's CDI devices carry.
  std::vector<std::string> Env() const;

  bool operator==(const ClaimSharing&) const = default;
};

// InvalidArgument naming the claim, the configuration's index and the field
// for an unknown apiVersion, kind, strategy, interval or field, or a
// percentage outside 1..100.
absl::StatusOr<ClaimSharing> ParseClaimConfig(
    const std::vector<OpaqueConfig>& configs, const ClaimRef& ref);

}  // namespace gpulet::dra
