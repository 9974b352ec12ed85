#include "src/model/resources/memory_units.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/config/names.h"

namespace gpulet::resources {
namespace {

struct Whole {
  std::string resource;
  size_t at = 0;  // position in devices[resource]
  const MappedDevice* device = nullptr;
};

// The GPUs advertised whole, in node order.
std::vector<Whole> WholeGpus(const DeviceMap& devices) {
  std::vector<Whole> out;
  for (const auto& [name, list] : devices) {
    for (size_t i = 0; i < list.size(); ++i) {
      const MappedDevice& d = list[i];
      if (d.parent_uuid.empty() && d.device.replica < 0) {
        out.push_back(Whole{name, i, &d});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Whole& a, const Whole& b) {
    return a.device->order < b.device->order;
  });
  return out;
}

absl::StatusOr<std::vector<Whole>> Select(const config::ReplicaDevices& sel,
                                          std::vector<Whole> whole) {
  switch (sel.kind) {
    case config::ReplicaDevices::Kind::kAll:
      return whole;
    case config::ReplicaDevices::Kind::kCount:
      if (static_cast<size_t>(sel.count) > whole.size()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "sharing.memory.devices: asks for ", sel.count,
            " GPUs, but the node advertises ", whole.size(), " whole GPUs"));
      }
      whole.resize(sel.count);
      return whole;
    case config::ReplicaDevices::Kind::kList:
      break;
  }
  std::vector<Whole> picked;
  std::set<const MappedDevice*> seen;
  for (const std::string& ref : sel.list) {
    const bool by_index =
        config::ClassifyDeviceRef(ref) == config::DeviceRefKind::kGpuIndex;
    auto it = std::find_if(whole.begin(), whole.end(), [&](const Whole& w) {
      return by_index ? w.device->index == ref : w.device->uuid == ref;
    });
    if (it == whole.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "sharing.memory.devices: no GPU advertised whole has ",
          by_index ? "index " : "UUID ", ref,
          " (a GPU in MIG mode under a MIG strategy is advertised as its MIG "
          "devices and cannot share memory units)"));
    }
    if (seen.insert(it->device).second) picked.push_back(*it);
  }
  std::sort(picked.begin(), picked.end(), [](const Whole& a, const Whole& b) {
    return a.device->order < b.device->order;
  });
  return picked;
}

}  // namespace

int64_t MemoryUnitsOf(const device::Gpu& gpu, int64_t unit_mib) {
  if (unit_mib < 1) return 0;
  return static_cast<int64_t>(gpu.memory_total_bytes >> 20) / unit_mib;
}

absl::StatusOr<DeviceMap> ApplyMemoryShares(const config::MemoryShares& memory,
                                            const device::Node& node,
                                            DeviceMap devices) {
  if (auto it = devices.find(memory.resource_name);
      it != devices.end() && !it->second.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sharing.memory.resourceName: ", memory.resource_name,
        " is already advertised for other devices; choose another name"));
  }
  absl::StatusOr<std::vector<Whole>> picked =
      Select(memory.devices, WholeGpus(devices));
  if (!picked.ok()) return picked.status();
  std::map<std::string, std::set<size_t>> taken;
  std::vector<MappedDevice> units;
  for (const Whole& w : *picked) {
    auto gpu = std::find_if(
        node.gpus.begin(), node.gpus.end(),
        [&](const device::Gpu& g) { return g.uuid == w.device->uuid; });
    const int64_t n =
        gpu == node.gpus.end() ? 0 : MemoryUnitsOf(*gpu, memory.unit_mib);
    if (static_cast<int64_t>(units.size()) + n > memory.max_devices_per_node) {
      int64_t total = 0;
      for (const Whole& all : *picked) {
        for (const device::Gpu& g : node.gpus) {
          if (g.uuid == all.device->uuid) {
            total += MemoryUnitsOf(g, memory.unit_mib);
          }
        }
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "sharing.memory.maxDevicesPerNode: the selected GPUs make ", total,
          " memory units (", memory.unit_mib,
          " MiB each), more than "
          "maxDevicesPerNode (",
          memory.max_devices_per_node,
          "); choose a larger sharing.memory.unit or raise "
          "sharing.memory.maxDevicesPerNode"));
    }
    taken[w.resource].insert(w.at);
    for (int64_t k = 0; k < n; ++k) {
      MappedDevice unit = *w.device;
      unit.device.id = sharing::MemoryUnitId(w.device->uuid, k);
      unit.device.replica = static_cast<int>(k);
      units.push_back(std::move(unit));
    }
  }
  for (auto& [name, positions] : taken) {
    std::vector<MappedDevice>& list = devices[name];
    std::vector<MappedDevice> kept;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!positions.contains(i)) kept.push_back(std::move(list[i]));
    }
    list = std::move(kept);
  }
  std::vector<MappedDevice>& out = devices[memory.resource_name];
  for (MappedDevice& u : units) out.push_back(std::move(u));
  return devices;
}

}  // namespace gpulet::resources
