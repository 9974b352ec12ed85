// Names of gpulet's devices in the node's DRA pool, and their inverse.
//
// A ResourceSlice names each device with a DNS label (at most 63
// characters); the scheduler copies that name into a claim's allocation and
// the kubelet hands it back to the plugin in NodePrepareResources. gpulet
// uses the names NVIDIA's DRA driver uses, so claims written for it select
// the same devices:
//   a whole GPU      "gpu-<index>"                                  "gpu-0"
//   a MIG device     "gpu-<parent>-mig-<gi profile id>-<start>-<size>"
//                                                                   "gpu-0-mig-19-6-1"
// where the MIG device is identified by its GPU instance: the GI profile's
// unique ID (nvmlGpuInstanceInfo_t::profileId, nvidia-smi's "ID") and its
// placement on the parent (start slice, slice count). A placement holds at
// most one GPU instance, so the name stays the same for as long as the MIG
// device exists, whatever order NVML enumerates MIG devices in.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gpulet::dra {

// The driver name gpulet registers with the kubelet and publishes its
// ResourceSlices under: NVIDIA's DRA driver's, so its DeviceClasses and
// claims work unchanged.
inline constexpr std::string_view kDriverName = "gpu.nvidia.com";

// "gpu-0". REQUIRES: gpu_index >= 0.
std::string GpuDeviceName(int gpu_index);

// "gpu-0-mig-19-6-1". REQUIRES: every argument >= 0.
std::string MigDeviceName(int parent_index, int profile_id, int placement_start,
                          int placement_size);

// What a device name identifies. For a whole GPU `mig` is false and the MIG
// fields stay -1.
struct DeviceRef {
  int gpu_index = -1;
  bool mig = false;
  int profile_id = -1;
  int placement_start = -1;
  int placement_size = -1;

  bool operator==(const DeviceRef&) const = default;
};

// The inverse of GpuDeviceName and MigDeviceName. Numbers are plain decimal
// (no sign, no leading zeros but "0"), so each device has exactly one name.
// InvalidArgument naming the device for anything else.
absl::StatusOr<DeviceRef> ParseDeviceName(std::string_view name);

}  // namespace gpulet::dra
