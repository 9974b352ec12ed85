// A simple, deterministic preferred-allocation policy (a
// pluginapi::PreferredHandler): the fallback of MakePreferredHandler where no
// topology applies, and the default of a PluginServer given none.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/model/pluginapi/device.h"

namespace gpulet::allocation {

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
// available, or more must_include IDs than size. Matches
// pluginapi::PreferredHandler.
absl::StatusOr<std::vector<std::string>> SimplePreferred(
    const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size);

}  // namespace gpulet::allocation
