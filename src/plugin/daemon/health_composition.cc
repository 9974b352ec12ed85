#include "src/plugin/daemon/health_composition.h"

#include <cstdint>
#include <utility>

#include "src/gpu/mps/mps_paths.h"
#include "src/model/sharing/unit_id.h"

namespace gpulet::daemon {
namespace {

// A device whose GPU's MPS control daemon is not up: a CUDA client finding
// no daemon runs without MPS, so without the limit its Allocate answer
// promised.
bool MpsDown(const pluginapi::Device& d, ResourceRole role,
             const HealthSources& sources) {
  const std::string gpu = MpsDaemonGpu(d, role);
  if (gpu.empty() || sources.mps_up.contains(gpu)) return false;
  return role == ResourceRole::kMemoryUnits
             ? sources.mps_enabled
             : sources.mps_replicas.contains(gpu);
}

bool PassthroughDown(
    const pluginapi::Device& d,
    const std::map<std::string, resources::PassthroughHealth>& health) {
  auto it = health.find(d.id);
  return it != health.end() && !it->second.healthy;
}

}  // namespace

std::string MpsDaemonGpu(const pluginapi::Device& device, ResourceRole role) {
  std::string uuid;
  int64_t k = 0;
  switch (role) {
    case ResourceRole::kMemoryUnits:
      return sharing::ParseMemoryUnitId(device.id, &uuid, &k) ? uuid : "";
    case ResourceRole::kGpus:
      return device.replica < 0 ? "" : sharing::MpsReplicaKey(device.id);
    case ResourceRole::kPassthrough:
      return "";
  }
  return "";
}

std::vector<pluginapi::Device> ComposeDeviceHealth(
    std::vector<pluginapi::Device> devices, ResourceRole role,
    const HealthSources& sources) {
  sources.book.Apply(sources.gpu_uuids, devices);
  for (pluginapi::Device& d : devices) {
    switch (role) {
      case ResourceRole::kGpus:
      case ResourceRole::kMemoryUnits:
        if (MpsDown(d, role, sources)) d.healthy = false;
        break;
      case ResourceRole::kPassthrough:
        if (PassthroughDown(d, sources.passthrough)) d.healthy = false;
        break;
    }
  }
  return devices;
}

}  // namespace gpulet::daemon
