// MakePreferredHandler: the one pluginapi::PreferredHandler the daemon installs
// for every resource. Per request it looks at the devices offered and
// dispatches:
//   - full GPUs, one device per GPU: BestSet over the score matrix
//     (TopologyPreferred), or allocation::SimplePreferred without a matrix;
//   - replicas (time-slicing/MPS; several devices share a GPU or a MIG
//     device): PickReplicas with the configured shared-devices policy;
//   - MIG devices: PickMig (same GPU first, then connected GPUs).
// Without a matrix (or when it misses a GPU of the snapshot) replicas and
// MIG devices are scored by NUMA locality only (NumaMatrix). Devices
// without a GPU index fall back to allocation::SimplePreferred.
// docs/allocation.md describes each policy.
//
// Ownership: the handler keeps the matrix alive through a shared_ptr.
// Thread safety: pure over immutable data; callable from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/model/allocation/replica_policy.h"
#include "src/model/allocation/score.h"
#include "src/model/pluginapi/device.h"
#include "src/model/pluginapi/handlers.h"

namespace gpulet::allocation {

struct PreferredOptions {
  // config's flags.plugin.sharedDevicesAllocationPolicy (default
  // distributed, as NVIDIA's).
  SharedPolicy shared_policy = SharedPolicy::kDistributed;
};

// Same contract as pluginapi::PreferredHandler: exactly `size` distinct IDs
// from `available`, must_include first (in request order), the others in
// the policy's order; INVALID_ARGUMENT naming the ID or field for a request
// that cannot be met (the messages pluginapi::ValidatePreferred uses). `m` may
// be null.
absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    const std::shared_ptr<const ScoreMatrix>& m,
    const PreferredOptions& options, const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size);

pluginapi::PreferredHandler MakePreferredHandler(
    std::shared_ptr<const ScoreMatrix> m, PreferredOptions options);

}  // namespace gpulet::allocation
