// The opaque configuration of our driver in a claim (claim_allocation.h's
// OpaqueConfig, or a claim's spec as the admission webhook sees it), in the
// shape of NVIDIA's DRA driver's API (resource.nvidia.com/v1beta1), so
// claims written for it keep working. Every field of that API is either
// implemented or refused by name; none is ignored:
//   apiVersion: resource.nvidia.com/v1beta1
//   kind: GpuConfig | MigDeviceConfig | VfioDeviceConfig
//   sharing:                                  (GpuConfig, MigDeviceConfig)
//     strategy: TimeSlicing | MPS             (required)
//     timeSlicingConfig:                      (GpuConfig, TimeSlicing only)
//       interval: Default | Short | Medium | Long
//     mpsConfig:                              (MPS only)
//       defaultActiveThreadPercentage: 1..100
//       defaultPinnedDeviceMemoryLimit: <quantity, at least 1Mi>
//       defaultPerDevicePinnedMemoryLimit: {<index or UUID>: <quantity>}
//   iommu: {backendPolicy: LegacyOnly | PreferIommuFD,  (VfioDeviceConfig)
//           enableAPIDevice: bool}
// VfioDeviceConfig is checked, then refused: `gpulet dra` publishes no VFIO
// devices it could apply to. A JSON null is an absent field, as in NVIDIA's
// Go types. The last configuration wins, whole (class first, then claim), as
// in NVIDIA's driver. What the sharing does on the node goes through the
// SharingApplier (sharing_applier.h): the GPU's time-slice, the claim's MPS
// control daemon with its default active-thread percentage and pinned
// memory limits.
//
// The one decoder of these configurations: the preparer and the admission
// webhook (src/dra/webhook) both call DecodeOpaqueParameters.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "src/dra/kubelet/claim_allocation.h"

namespace gpulet::dra {

struct ClaimSharing {
  std::string strategy;  // "", "TimeSlicing", "MPS"
  std::string interval;  // TimeSlicing's, "" when not given
  // MPS's mpsConfig: the claim's control daemon's defaults.
  std::optional<int> active_thread_percentage;
  std::optional<int64_t> pinned_memory_limit;  // bytes, >= 1 MiB
  // Key as written (a decimal index into the claim's devices, or a GPU or
  // MIG UUID) -> bytes, >= 1 MiB.
  std::map<std::string, int64_t> per_device_pinned_memory_limit;

  // The pinned device memory limit of each of `uuids` (the claim's
  // devices, in its order, as the daemon's CUDA_VISIBLE_DEVICES lists
  // them) in MiB: defaultPinnedDeviceMemoryLimit for each, then the
  // per-device entries over it. InvalidArgument naming the entry for an
  // index past the devices or a UUID not among them.
  absl::StatusOr<std::map<std::string, int64_t>> PinnedMemoryLimitsMiB(
      const std::vector<std::string>& uuids) const;

  bool operator==(const ClaimSharing&) const = default;
};

// One configuration's parameters, decoded and checked.
struct OpaqueSettings {
  std::string kind;      // GpuConfig or MigDeviceConfig
  ClaimSharing sharing;  // strategy "" when the configuration has none
};

// Decodes one configuration's `parameters`. InvalidArgument whose message
// starts with the field's path
// ("sharing.mpsConfig.defaultPinnedDeviceMemoryLimit:
// ...") below `path` (the parameters' own path; "" for none) for an unknown
// apiVersion, kind, strategy, interval or field, a value of the wrong type
// or out of range, a field of the other strategy, or a VfioDeviceConfig.
absl::StatusOr<OpaqueSettings> DecodeOpaqueParameters(
    const nlohmann::json& parameters, absl::string_view path = "");

// The sharing the claim's configurations give: the last one's. Errors as
// DecodeOpaqueParameters, prefixed with the claim and the configuration's
// index ("claim ns/c: opaque config [1]: sharing.strategy: ...").
absl::StatusOr<ClaimSharing> ParseClaimConfig(
    const std::vector<OpaqueConfig>& configs, const ClaimRef& ref);

}  // namespace gpulet::dra
