// The device IDs of memory units: "<GPU-uuid>::m<k>", k = 0 .. units-1
// (docs/sharing.md). Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpulet::sharing {

std::string MemoryUnitId(std::string_view gpu_uuid, int64_t k);

// The GPU UUID and unit number of a memory unit ID; false when `id` is not
// "<uuid>::m<k>" with a non-empty uuid and a decimal k of at most 9 digits.
bool ParseMemoryUnitId(std::string_view id, std::string* gpu_uuid, int64_t* k);

}  // namespace gpulet::sharing
