#include "src/model/resources/device_map.h"

#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "src/base/config/names.h"

namespace gpulet::resources {
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

bool Matches(const MappedDevice& d, const std::string& ref, bool by_index) {
  return by_index ? d.index == ref
                  : (d.uuid == ref || MatchesLegacyMigUuid(d, ref));
}

// Why `ref` is not a device of `resource`: where the node has it instead.
std::string WhyNoMatch(const DeviceMap& all, const std::string& resource,
                       const std::string& ref, bool by_index) {
  std::vector<std::string> elsewhere;
  std::vector<std::string> mig_of_gpu;
  for (const auto& [name, list] : all) {
    for (const MappedDevice& d : list) {
      if (d.device.replica > 0) continue;
      if (Matches(d, ref, by_index)) {
        elsewhere.push_back(absl::StrCat(ref, " is a device of ", name));
      } else if (by_index ? d.index.rfind(ref + ":", 0) == 0
                          : (!d.parent_uuid.empty() && d.parent_uuid == ref)) {
        mig_of_gpu.push_back(absl::StrCat(d.index, " in ", name));
      }
    }
  }
  if (!elsewhere.empty()) {
    return absl::StrCat(" (", absl::StrJoin(elsewhere, ", "), ", not of ",
                        resource, ")");
  }
  if (!mig_of_gpu.empty()) {
    return absl::StrCat(
        " (GPU ", ref,
        " is MIG-enabled and advertised as its MIG devices, "
        "not as a device of ",
        resource, ": ", absl::StrJoin(mig_of_gpu, ", "),
        "; name MIG devices as <gpu>:<mig> or by their MIG UUID)");
  }
  return by_index ? " (no GPU or MIG device of this node has that index)"
                  : " (no GPU or MIG device of this node has that UUID)";
}

absl::StatusOr<size_t> FindRef(const DeviceMap& all,
                               const std::string& resource,
                               const std::string& ref) {
  const std::vector<MappedDevice>& devices = all.at(resource);
  config::DeviceRefKind kind = config::ClassifyDeviceRef(ref);
  bool by_index = kind == config::DeviceRefKind::kGpuIndex ||
                  kind == config::DeviceRefKind::kMigIndex;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (Matches(devices[i], ref, by_index)) return i;
  }
  return absl::FailedPreconditionError(
      absl::StrCat(by_index ? "no matching device at index: "
                            : "no matching device with UUID: ",
                   ref, WhyNoMatch(all, resource, ref, by_index)));
}

// Positions in `devices` the entry selects, in device order.
absl::StatusOr<std::vector<size_t>> Select(
    const DeviceMap& all, const config::ReplicatedResource& r) {
  const std::vector<MappedDevice>& devices = all.at(r.name);
  std::vector<size_t> picked;
  switch (r.devices.kind) {
    case config::ReplicaDevices::Kind::kAll:
      for (size_t i = 0; i < devices.size(); ++i) picked.push_back(i);
      break;
    case config::ReplicaDevices::Kind::kCount:
      if (static_cast<size_t>(r.devices.count) > devices.size()) {
        return absl::FailedPreconditionError(
            absl::StrCat("requested ", r.devices.count,
                         " devices to be replicated, but only ", devices.size(),
                         " devices available"));
      }
      for (int i = 0; i < r.devices.count; ++i) picked.push_back(i);
      break;
    case config::ReplicaDevices::Kind::kList: {
      std::set<size_t> unique;
      for (const std::string& ref : r.devices.list) {
        absl::StatusOr<size_t> at = FindRef(all, r.name, ref);
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
    absl::StatusOr<std::vector<size_t>> picked = Select(devices, r);
    if (!picked.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(entry, ".devices: ", picked.status().message()));
    }
    const std::string name = config::AdvertisedName(section, r);
    for (size_t at : *picked) {
      auto [it, added] = taken[r.name].emplace(at, e);
      if (!added) {
        return absl::FailedPreconditionError(
            absl::StrCat(entry, ".devices: device ", base->second[at].uuid,
                         " is already shared by ", section_path, ".resources[",
                         it->second, "]"));
      }
      for (int n = 0; n < r.replicas; ++n) {
        pluginapi::Device d = base->second[at].device;
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

}  // namespace gpulet::resources
