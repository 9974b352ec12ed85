// Allocate answers per device-list strategy. Only NVIDIA's default
// "envvar" strategy lives here for now: the container runtime hook reads
// NVIDIA_VISIBLE_DEVICES and injects those GPUs.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "src/plugin/device_list.h"

namespace gpulet::plugin {

inline constexpr char kVisibleDevicesEnv[] = "NVIDIA_VISIBLE_DEVICES";

// NVIDIA_VISIBLE_DEVICES = the devices' visible_id (the ID itself when a
// device has none), deduplicated in request order and comma-joined, so
// replicas of one GPU name that GPU once. An ID missing from the snapshot
// is INVALID_ARGUMENT "unknown device: <id>". Matches AllocateHandler.
absl::StatusOr<v1beta1::ContainerAllocateResponse> EnvvarResponse(
    const DeviceSnapshot& snapshot, const std::vector<std::string>& ids);

}  // namespace gpulet::plugin
