// The per-resource half of ComputeLabels (labels.h): nvidia.com/gpu.* for
// full GPUs and, by MIG strategy, the MIG labels. Private to src/model/labels.
//
// Thread safety: pure functions.
#pragma once

#include "src/base/config/config.h"
#include "src/gpu/device/gpu.h"
#include "src/model/labels/labels.h"

namespace gpulet::labels::internal {

// Adds the resource labels of `node` (at least one GPU) to `out`.
void AddResourceLabels(const device::Node& node, const config::Config& config,
                       Labels& out);

}  // namespace gpulet::labels::internal
