#include "sim/machine_queries.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "sim/nvml_values.h"

namespace gpulet::sim {
namespace {

bool SameBusId(const std::string& a, const std::string& b) {
  std::optional<PciAddress> pa = ParsePciBusId(a);
  return pa.has_value() && pa == ParsePciBusId(b);
}

std::set<std::string> SwitchBusIds(const Gpu& gpu) {
  std::set<std::string> ids;
  for (const NvLink& link : gpu.nvlinks) {
    if (!link.active || link.remote_type != NVML_NVLINK_DEVICE_TYPE_SWITCH) {
      continue;
    }
    std::optional<PciAddress> address = ParsePciBusId(link.remote_bus_id);
    ids.insert(address ? FormatPciBusId(*address) : link.remote_bus_id);
  }
  return ids;
}

}  // namespace

const GpuInstanceProfile* FindGiProfile(const Gpu& gpu, unsigned id) {
  for (const GpuInstanceProfile& profile : gpu.gi_profiles) {
    if (profile.id == id) return &profile;
  }
  return nullptr;
}

const ComputeInstanceProfile* FindCiProfile(const Gpu& gpu, unsigned id) {
  for (const ComputeInstanceProfile& profile : gpu.ci_profiles) {
    if (profile.id == id) return &profile;
  }
  return nullptr;
}

const MigDevice* FindMig(const Gpu& gpu, unsigned gi,
                         std::optional<unsigned> ci) {
  for (const MigDevice& mig : gpu.mig_devices) {
    if (mig.gpu_instance_id != gi) continue;
    if (ci.has_value() && mig.compute_instance_id != *ci) continue;
    return &mig;
  }
  return nullptr;
}

std::optional<CiProfileInGi> ComputeProfileIn(
    const GpuInstanceProfile& gi, const ComputeInstanceProfile& ci) {
  if (ci.slice_count == 0 || gi.slice_count == 0 ||
      ci.slice_count > gi.slice_count) {
    return std::nullopt;
  }
  CiProfileInGi result;
  result.slice_count = ci.slice_count;
  result.instance_count = gi.slice_count / ci.slice_count;
  // A compute instance spanning its whole GPU instance has all of its SMs;
  // a smaller one has the SMs the profile table gives, capped by the GI's.
  result.multiprocessor_count =
      ci.slice_count == gi.slice_count
          ? gi.multiprocessor_count
          : std::min(ci.multiprocessor_count, gi.multiprocessor_count);
  result.name = ci.slice_count == gi.slice_count
                    ? gi.name
                    : absl::StrCat(ci.slice_count, "c.", gi.name);
  return result;
}

std::string MigDeviceName(const Gpu& gpu, const MigDevice& mig) {
  const GpuInstanceProfile* gi =
      FindGiProfile(gpu, mig.gpu_instance_profile_id);
  const ComputeInstanceProfile* ci =
      FindCiProfile(gpu, mig.compute_instance_profile_id);
  std::string profile;
  if (gi != nullptr && ci != nullptr) {
    std::optional<CiProfileInGi> in_gi = ComputeProfileIn(*gi, *ci);
    profile = in_gi ? in_gi->name : gi->name;
  } else if (gi != nullptr) {
    profile = gi->name;
  }
  return absl::StrCat(gpu.name, " MIG ", profile);
}

bool ShareNvLink(const Machine& machine, int a, int b) {
  const Gpu& ga = machine.gpus[a];
  const Gpu& gb = machine.gpus[b];
  for (const NvLink& link : ga.nvlinks) {
    if (!link.active || link.remote_type != NVML_NVLINK_DEVICE_TYPE_GPU) {
      continue;
    }
    if (link.peer_gpu == b || SameBusId(link.remote_bus_id, gb.bus_id)) {
      return true;
    }
  }
  std::set<std::string> switches_a = SwitchBusIds(ga);
  for (const std::string& id : SwitchBusIds(gb)) {
    if (switches_a.contains(id)) return true;
  }
  return false;
}

}  // namespace gpulet::sim
