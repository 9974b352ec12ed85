// The per-resource half of ComputeLabels (labels.h): nvidia.com/gpu.* for
// full GPUs and, by MIG strategy, the MIG labels. Private to src/labels.
//
// Thread safety: pure functions.
#pragma once

#include "src/config/config.h"
#include "src/device/gpu.h"
#include "src/labels/labels.h"

namespace gpulet::labels::internal {

// Adds the resource labels of `node` (at least one GPU) to `out`.
void AddResourceLabels(const device::Node& node, const config::Config& config,
                       Labels& out);

}  // namespace gpulet::labels::internal
