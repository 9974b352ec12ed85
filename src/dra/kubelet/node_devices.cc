#include "src/dra/kubelet/node_devices.h"

#include "src/dra/kubelet/device_names.h"

namespace gpulet::dra {

std::string MigDraName(const device::MigDevice& mig) {
  if (!mig.gi_placement) return "";
  return MigDeviceName(static_cast<int>(mig.parent_index),
                       static_cast<int>(mig.gi_placement->profile_id),
                       static_cast<int>(mig.gi_placement->start),
                       static_cast<int>(mig.gi_placement->size));
}

std::vector<std::string> NodeDeviceNames(const device::Node& node) {
  std::vector<std::string> out;
  for (const device::Gpu& gpu : node.gpus) {
    if (!gpu.mig_enabled) {
      out.push_back(GpuDeviceName(static_cast<int>(gpu.index)));
      continue;
    }
    for (const device::MigDevice& mig : gpu.mig_devices) {
      if (std::string name = MigDraName(mig); !name.empty()) {
        out.push_back(std::move(name));
      }
    }
  }
  return out;
}

std::vector<DeviceHealth> HealthOfEvent(const device::Node& node, int gpu_index,
                                        std::optional<unsigned> gpu_instance_id,
                                        bool healthy, const std::string& reason,
                                        int64_t now_unix, DeviceFault fault) {
  std::vector<DeviceHealth> out;
  auto add = [&](std::string name) {
    out.push_back({.device = std::move(name),
                   .healthy = healthy,
                   .message = healthy ? "" : reason,
                   .updated_unix = now_unix,
                   .fault = healthy ? DeviceFault{} : fault});
  };
  for (const device::Gpu& gpu : node.gpus) {
    if (static_cast<int>(gpu.index) != gpu_index) continue;
    if (!gpu_instance_id) add(GpuDeviceName(gpu_index));
    for (const device::MigDevice& mig : gpu.mig_devices) {
      if (gpu_instance_id && mig.gpu_instance_id != *gpu_instance_id) continue;
      if (std::string name = MigDraName(mig); !name.empty()) add(name);
    }
  }
  return out;
}

}  // namespace gpulet::dra
