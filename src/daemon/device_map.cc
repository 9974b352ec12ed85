#include "src/daemon/device_map.h"

#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/config/names.h"

namespace gpulet::daemon {
namespace {

// "MIG-GPU-<uuid>/<gi>/<ci>", the pre-R470 MIG UUID form, names a MIG device
// by its parent GPU and instance IDs.
bool MatchesLegacyMigUuid(const MappedDevice& d, const std::string& ref) {
  if (d.parent_uuid.empty() || ref.rfind("MIG-GPU-", 0) != 0) return false;
  std::vector<std::string> parts = absl::StrSplit(ref.substr(4), '/');
  return parts.size() == 3 && parts[0] == d.parent_uuid &&
         parts[1] == absl::StrCat(d.device.gpu_instance_id) &&
         parts[2] == absl::StrCat(d.device.compute_instance_id);
}

absl::StatusOr<size_t> FindRef(const std::vector<MappedDevice>& devices,
                               const std::string& ref) {
  config::DeviceRefKind kind = config::ClassifyDeviceRef(ref);
  bool by_index = kind == config::DeviceRefKind::kGpuIndex ||
                  kind == config::DeviceRefKind::kMigIndex;
  for (size_t i = 0; i < devices.size(); ++i) {
    const MappedDevice& d = devices[i];
    if (by_index ? d.index == ref
                 : (d.uuid == ref || MatchesLegacyMigUuid(d, ref))) {
      return i;
    }
  }
  return absl::FailedPreconditionError(
      by_index ? absl::StrCat("no matching device at index: ", ref)
               : absl::StrCat("no matching device with UUID: ", ref));
}

// Positions in `devices` the entry selects, in device order.
absl::StatusOr<std::vector<size_t>> Select(
    const std::vector<MappedDevice>& devices,
    const config::ReplicatedResource& r) {
  std::vector<size_t> picked;
  switch (r.devices.kind) {
    case config::ReplicaDevices::Kind::kAll:
      for (size_t i = 0; i < devices.size(); ++i) picked.push_back(i);
      break;
    case config::ReplicaDevices::Kind::kCount:
      if (static_cast<size_t>(r.devices.count) > devices.size()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "requested ", r.devices.count,
            " devices to be replicated, but only ", devices.size(),
            " devices available"));
      }
      for (int i = 0; i < r.devices.count; ++i) picked.push_back(i);
      break;
    case config::ReplicaDevices::Kind::kList: {
      std::set<size_t> unique;
      for (const std::string& ref : r.devices.list) {
        absl::StatusOr<size_t> at = FindRef(devices, ref);
        if (!at.ok()) return at.status();
        unique.insert(*at);
      }
      picked.assign(unique.begin(), unique.end());
      break;
    }
  }
  return picked;
}

}  // namespace

std::string ReplicaId(const std::string& id, int n) {
  return absl::StrCat(id, "::", n);
}

absl::StatusOr<DeviceMap> ApplyReplicas(
    const config::ReplicatedResources& section, const std::string& section_path,
    DeviceMap devices) {
  DeviceMap out;
  // Position in the original resource -> the entry that took it.
  std::map<std::string, std::map<size_t, size_t>> taken;
  for (size_t e = 0; e < section.resources.size(); ++e) {
    const config::ReplicatedResource& r = section.resources[e];
    auto base = devices.find(r.name);
    if (base == devices.end()) continue;
    const std::string entry = absl::StrCat(section_path, ".resources[", e, "]");
    absl::StatusOr<std::vector<size_t>> picked = Select(base->second, r);
    if (!picked.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(entry, ".devices: ", picked.status().message()));
    }
    const std::string name = config::AdvertisedName(section, r);
    for (size_t at : *picked) {
      auto [it, added] = taken[r.name].emplace(at, e);
      if (!added) {
        return absl::FailedPreconditionError(absl::StrCat(
            entry, ".devices: device ", base->second[at].uuid,
            " is already shared by ", section_path, ".resources[", it->second,
            "]"));
      }
      for (int n = 0; n < r.replicas; ++n) {
        plugin::Device d = base->second[at].device;
        d.id = ReplicaId(d.id, n);
        d.replica = n;
        MappedDevice replica = base->second[at];
        replica.device = std::move(d);
        out[name].push_back(std::move(replica));
      }
    }
  }
  for (auto& [name, list] : devices) {
    const auto& shared = taken[name];
    for (size_t i = 0; i < list.size(); ++i) {
      if (!shared.contains(i)) out[name].push_back(std::move(list[i]));
    }
  }
  return out;
}

}  // namespace gpulet::daemon
