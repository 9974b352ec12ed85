#include "src/model/pluginapi/device.h"

#include <utility>

namespace gpulet::pluginapi {

const Device* DeviceSnapshot::Find(const std::string& id) const {
  if (index != nullptr) {
    auto it = index->find(id);
    return it == index->end() ? nullptr : &devices[it->second];
  }
  for (const Device& d : devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

void DeviceSnapshot::BuildIndex() {
  auto built = std::make_shared<absl::flat_hash_map<std::string, size_t>>();
  built->reserve(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) built->emplace(devices[i].id, i);
  index = std::move(built);
}

}  // namespace gpulet::pluginapi
