#include "src/plugin/daemon/health_composition.h"

#include <cstdint>
#include <utility>

#include "src/model/sharing/unit_id.h"

namespace gpulet::daemon {
namespace {

// A memory unit whose GPU's MPS control daemon is not up: a CUDA client
// finding no daemon runs without MPS, so without the limit its Allocate
// answer promised.
bool MpsDown(const pluginapi::Device& d, const std::set<std::string>& up) {
  std::string uuid;
  int64_t k = 0;
  return sharing::ParseMemoryUnitId(d.id, &uuid, &k) && !up.contains(uuid);
}

bool PassthroughDown(
    const pluginapi::Device& d,
    const std::map<std::string, resources::PassthroughHealth>& health) {
  auto it = health.find(d.id);
  return it != health.end() && !it->second.healthy;
}

}  // namespace

std::vector<pluginapi::Device> ComposeDeviceHealth(
    std::vector<pluginapi::Device> devices, ResourceRole role,
    const HealthSources& sources) {
  sources.book.Apply(sources.gpu_uuids, devices);
  for (pluginapi::Device& d : devices) {
    switch (role) {
      case ResourceRole::kGpus:
        break;
      case ResourceRole::kMemoryUnits:
        if (sources.mps_enabled && MpsDown(d, sources.mps_up)) {
          d.healthy = false;
        }
        break;
      case ResourceRole::kPassthrough:
        if (PassthroughDown(d, sources.passthrough)) d.healthy = false;
        break;
    }
  }
  return devices;
}

}  // namespace gpulet::daemon
