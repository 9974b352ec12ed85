// The topology-aware PreferredHandler for full GPUs: maps device IDs to
// score-matrix positions through each device's gpu_index, asks BestSet for
// the best set, and maps the answer back to IDs. Requests it cannot map
// (a device without a GPU index, an index the matrix does not know, two
// devices on one GPU as with replicas) fall back to
// allocation::SimplePreferred.
//
// Ownership: the handler keeps the matrix alive through a shared_ptr.
// Thread safety: the handler is a pure function over immutable data and may
// be called concurrently from the plugin server's threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/model/allocation/score.h"
#include "src/model/pluginapi/device.h"
#include "src/model/pluginapi/handlers.h"

namespace gpulet::allocation {

// Same contract as pluginapi::PreferredHandler; the answer lists must_include
// first (in request order), then the other chosen devices by GPU position.
absl::StatusOr<std::vector<std::string>> TopologyPreferred(
    const ScoreMatrix& m, const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size);

pluginapi::PreferredHandler MakeTopologyPreferred(
    std::shared_ptr<const ScoreMatrix> m);

}  // namespace gpulet::allocation
