#include "src/dra/kubelet/claim_status.h"

#include <utility>

#include "src/dra/kubelet/device_names.h"

namespace gpulet::dra {
namespace {

using Json = nlohmann::json;

const device::Gpu* FindGpu(const device::Node& node, int index) {
  for (const device::Gpu& gpu : node.gpus) {
    if (static_cast<int>(gpu.index) == index) return &gpu;
  }
  return nullptr;
}

const device::MigDevice* FindMig(const device::Gpu& gpu, const DeviceRef& ref) {
  for (const device::MigDevice& mig : gpu.mig_devices) {
    if (mig.gi_placement &&
        static_cast<int>(mig.gi_placement->profile_id) == ref.profile_id &&
        static_cast<int>(mig.gi_placement->start) == ref.placement_start &&
        static_cast<int>(mig.gi_placement->size) == ref.placement_size) {
      return &mig;
    }
  }
  return nullptr;
}

Json DeviceData(const device::Node& node, const PreparedDevice& d) {
  Json data = Json::object();
  if (!d.uuid.empty()) data["uuid"] = d.uuid;
  absl::StatusOr<DeviceRef> ref = ParseDeviceName(d.device);
  if (!ref.ok()) return data;
  const device::Gpu* gpu = FindGpu(node, ref->gpu_index);
  if (!ref->mig) {
    if (!data.contains("uuid") && gpu != nullptr) data["uuid"] = gpu->uuid;
    return data;
  }
  data["placement"] = {{"start", ref->placement_start},
                       {"size", ref->placement_size}};
  if (gpu == nullptr) return data;
  data["parentUUID"] = gpu->uuid;
  if (const device::MigDevice* mig = FindMig(*gpu, *ref); mig != nullptr) {
    if (!data.contains("uuid")) data["uuid"] = mig->uuid;
    data["profile"] = mig->profile;
  }
  return data;
}

bool Ours(const Json& entry, const std::string& driver,
          const std::string& pool) {
  return entry.is_object() && entry.value("driver", "") == driver &&
         entry.value("pool", "") == pool;
}

}  // namespace

Json DeviceStatusEntries(const std::string& driver, const device::Node& node,
                         const std::vector<PreparedDevice>& devices) {
  Json out = Json::array();
  for (const PreparedDevice& d : devices) {
    Json entry = {{"driver", driver}, {"pool", d.pool}, {"device", d.device}};
    if (d.share_id) entry["shareID"] = *d.share_id;
    entry["data"] = DeviceData(node, d);
    out.push_back(std::move(entry));
  }
  return out;
}

std::optional<Json> MergedDeviceStatus(const Json& claim,
                                       const std::string& driver,
                                       const std::string& pool,
                                       const Json& ours) {
  Json current = Json::array();
  if (claim.contains("status") && claim["status"].is_object()) {
    current = claim["status"].value("devices", Json::array());
  }
  Json merged = Json::array();
  Json mine = Json::array();
  for (const Json& entry : current) {
    (Ours(entry, driver, pool) ? mine : merged).push_back(entry);
  }
  if (mine == ours) return std::nullopt;
  for (const Json& entry : ours) merged.push_back(entry);
  return merged;
}

Json DeviceStatusPatch(const Json& claim, const Json& devices) {
  const Json& meta = claim["metadata"];
  return {{"metadata",
           {{"uid", meta.value("uid", "")},
            {"resourceVersion", meta.value("resourceVersion", "")}}},
          {"status", {{"devices", devices}}}};
}

}  // namespace gpulet::dra
