// Memory shares in the resource model: the GPUs sharing.memory selects are
// taken out of the resources that advertise whole GPUs and advertised as
// memory units instead, one device per unit, IDs "<GPU-uuid>::m<k>"
// (sharing::MemoryUnitId) for k = 0 .. units-1 with units = floor(GPU
// memory / unit) (docs/sharing.md).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "src/base/config/config.h"
#include "src/gpu/device/gpu.h"
#include "src/model/resources/device_map.h"
#include "src/model/sharing/unit_id.h"

namespace gpulet::resources {

// floor(memory / unit); 0 when the memory is unknown.
int64_t MemoryUnitsOf(const device::Gpu& gpu, int64_t unit_mib);

// Moves the GPUs `memory` selects out of `devices` (whichever resource
// advertises them whole) into `memory.resource_name` as memory units.
// FailedPrecondition naming the field when a selected GPU is not advertised
// whole (MIG mode under a MIG strategy, or not on the node), when the
// resource name is already advertised, or when the units exceed
// maxDevicesPerNode.
absl::StatusOr<DeviceMap> ApplyMemoryShares(const config::MemoryShares& memory,
                                            const device::Node& node,
                                            DeviceMap devices);

}  // namespace gpulet::resources
