// A simple, deterministic preferred-allocation policy: the seam the
// topology-aware policy will later plug into (PreferredHandler).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/plugin/device_list.h"

namespace gpulet::plugin {

// Returns exactly `size` distinct IDs from `available`: `must_include`
// first (in its order), then the other available devices ordered by
//   1. healthy before unhealthy,
//   2. sharing a NUMA node with must_include (with no NUMA node among
//      must_include: on the NUMA node holding the most available devices,
//      lowest node ID on a tie) before elsewhere,
//   3. GPU index (unknown index last), then ID.
// Duplicates in the inputs count once. INVALID_ARGUMENT naming the ID or
// field when the request cannot be met: size < 1, size above the number of
// available devices, an ID not in the snapshot, a must_include ID not in
// available, or more must_include IDs than size. Matches PreferredHandler.
absl::StatusOr<std::vector<std::string>> SimplePreferred(
    const DeviceSnapshot& snapshot, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size);

}  // namespace gpulet::plugin
