// The `mig:` section of a GPU: capability, mode, profile tables (from the
// GPU model unless given) and MIG devices, checked against the tables the way
// the driver would refuse an impossible layout.
#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/gpu_parser.h"

namespace gpulet::sim::parser {
namespace {

using yaml::Ctx;
using yaml::Field;
using yaml::MapView;

constexpr unsigned kMaxSlots = 8;
constexpr unsigned kMaxGpuInstanceId = 63;
constexpr unsigned kMaxComputeInstanceId = 7;

absl::StatusOr<bool> ReadMode(const Ctx& ctx, const Field& field) {
  return yaml::ReadEnum<bool>(ctx, field,
                              {{"disabled", false}, {"enabled", true}});
}

auto UintReader(const Ctx& ctx, uint64_t min, uint64_t max) {
  return [&ctx, min, max](const Field& f) {
    return yaml::ReadUint(ctx, f, min, max);
  };
}

// A GPU instance seen while reading MIG devices.
struct GpuInstanceUse {
  const GpuInstanceProfile* profile;
  unsigned start;
  std::string path;            // the first device that named it
  std::vector<bool> ci_slots;  // compute slices taken by its CIs
  std::vector<unsigned> ci_ids;
};

std::string SlotRange(unsigned start, unsigned size) {
  return absl::StrCat(start, "-", start + size - 1);
}

absl::StatusOr<const GpuInstanceProfile*> FindGiProfile(const Ctx& ctx,
                                                        const Field& field,
                                                        const Gpu& gpu) {
  GPULET_ASSIGN_OR_RETURN(std::string name, yaml::ReadString(ctx, field, 40));
  std::vector<std::string> names;
  for (const GpuInstanceProfile& p : gpu.gi_profiles) {
    if (absl::EqualsIgnoreCase(p.name, name)) return &p;
    names.push_back(p.name);
  }
  return yaml::FieldError(
      ctx, field,
      absl::StrCat("unknown MIG profile \"", absl::CHexEscape(name), "\" for ",
                   gpu.name, " (known: ", absl::StrJoin(names, ", "), ")"));
}

// Claims the GPU instance for a device: the same id must always name the
// same profile and placement, and distinct instances must not overlap.
absl::StatusOr<GpuInstanceUse*> ClaimGpuInstance(
    const Ctx& ctx, const Field& item, const Field& gi_field, unsigned gi_id,
    const GpuInstanceProfile* profile, unsigned start,
    std::map<unsigned, GpuInstanceUse>* uses) {
  auto found = uses->find(gi_id);
  if (found != uses->end()) {
    if (found->second.profile != profile || found->second.start != start) {
      return yaml::FieldError(
          ctx, gi_field,
          absl::StrCat("duplicate GPU instance id ", gi_id, ": ",
                       found->second.path, " uses it for ",
                       found->second.profile->name, " at placement ",
                       found->second.start));
    }
    return &found->second;
  }
  unsigned count = 0;
  for (const auto& [id, use] : *uses) {
    if (use.profile == profile) ++count;
    bool overlap = start < use.start + use.profile->placement_size &&
                   use.start < start + profile->placement_size;
    if (overlap) {
      return yaml::FieldError(
          ctx, item,
          absl::StrCat("placement ", SlotRange(start, profile->placement_size),
                       " overlaps GPU instance ", id, " (", use.profile->name,
                       " at ",
                       SlotRange(use.start, use.profile->placement_size), ", ",
                       use.path, ")"));
    }
  }
  if (count >= profile->instance_count) {
    return yaml::FieldError(ctx, item,
                            absl::StrCat("more than ", profile->instance_count,
                                         " instances of ", profile->name));
  }
  GpuInstanceUse use{profile,
                     start,
                     item.path,
                     std::vector<bool>(profile->slice_count, false),
                     {}};
  return &uses->emplace(gi_id, std::move(use)).first->second;
}

// Fills the compute-instance half of `dev` inside `gi`.
absl::Status ClaimComputeInstance(const Ctx& ctx, const MapView& map,
                                  const Gpu& gpu, GpuInstanceUse* gi,
                                  MigDevice* dev) {
  unsigned slices = gi->profile->slice_count;
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(map, "ciSlices", &slices,
                                            UintReader(ctx, 1, kMaxSlots)));
  const ComputeInstanceProfile* ci = nullptr;
  for (const ComputeInstanceProfile& p : gpu.ci_profiles) {
    if (p.slice_count == slices) {
      ci = &p;
      break;
    }
  }
  const Field& self = map.self();
  if (ci == nullptr || slices > gi->profile->slice_count) {
    return yaml::FieldError(
        ctx, map.Find("ciSlices").value_or(self),
        absl::StrCat("no ", slices, "-slice compute instance profile fits in ",
                     gi->profile->name));
  }
  unsigned start = 0;
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(map, "ciPlacement", &start,
                                            UintReader(ctx, 0, kMaxSlots)));
  if (start + slices > gi->profile->slice_count) {
    return yaml::FieldError(
        ctx, map.Find("ciPlacement").value_or(self),
        absl::StrCat("compute slices ", SlotRange(start, slices),
                     " lie outside ", gi->profile->name));
  }
  for (unsigned s = start; s < start + slices; ++s) {
    if (gi->ci_slots[s]) {
      return yaml::FieldError(
          ctx, self,
          absl::StrCat("compute slices ", SlotRange(start, slices),
                       " overlap another compute instance of GPU instance ",
                       dev->gpu_instance_id));
    }
  }
  if (std::find(gi->ci_ids.begin(), gi->ci_ids.end(),
                dev->compute_instance_id) != gi->ci_ids.end()) {
    return yaml::FieldError(
        ctx, map.Find("ci").value_or(self),
        absl::StrCat("duplicate compute instance id ", dev->compute_instance_id,
                     " in GPU instance ", dev->gpu_instance_id));
  }
  for (unsigned s = start; s < start + slices; ++s) gi->ci_slots[s] = true;
  gi->ci_ids.push_back(dev->compute_instance_id);
  dev->compute_instance_profile_id = ci->id;
  dev->ci_placement_start = start;
  dev->ci_placement_size = slices;
  return absl::OkStatus();
}

absl::Status ReadMigDevice(const Ctx& ctx, const Field& item,
                           std::map<unsigned, GpuInstanceUse>* uses,
                           ParsedGpu* out) {
  GPULET_ASSIGN_OR_RETURN(MapView map,
                          MapView::Read(ctx, item,
                                        {"profile", "placement", "gi", "ci",
                                         "ciSlices", "ciPlacement", "uuid"}));
  MigDevice dev;
  GPULET_ASSIGN_OR_RETURN(Field profile_field, map.Require("profile"));
  GPULET_ASSIGN_OR_RETURN(const GpuInstanceProfile* profile,
                          FindGiProfile(ctx, profile_field, out->gpu));
  GPULET_ASSIGN_OR_RETURN(Field placement, map.Require("placement"));
  GPULET_ASSIGN_OR_RETURN(dev.gi_placement_start,
                          yaml::ReadUint(ctx, placement, 0, kMaxSlots - 1));
  const std::vector<unsigned>& starts = profile->placement_starts;
  if (std::find(starts.begin(), starts.end(), dev.gi_placement_start) ==
      starts.end()) {
    return yaml::FieldError(
        ctx, placement,
        absl::StrCat("placement ", dev.gi_placement_start, " is not valid for ",
                     profile->name,
                     " (valid starts: ", absl::StrJoin(starts, ", "), ")"));
  }
  dev.gi_placement_size = profile->placement_size;
  dev.gpu_instance_profile_id = profile->id;
  GPULET_ASSIGN_OR_RETURN(Field gi_field, map.Require("gi"));
  GPULET_ASSIGN_OR_RETURN(dev.gpu_instance_id,
                          yaml::ReadUint(ctx, gi_field, 0, kMaxGpuInstanceId));
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "ci", &dev.compute_instance_id,
                         UintReader(ctx, 0, kMaxComputeInstanceId)));
  GPULET_ASSIGN_OR_RETURN(Field uuid, map.Require("uuid"));
  GPULET_ASSIGN_OR_RETURN(dev.uuid, ParseUuid(ctx, uuid, "MIG"));
  GPULET_ASSIGN_OR_RETURN(
      GpuInstanceUse * gi,
      ClaimGpuInstance(ctx, item, gi_field, dev.gpu_instance_id, profile,
                       dev.gi_placement_start, uses));
  GPULET_RETURN_IF_ERROR(ClaimComputeInstance(ctx, map, out->gpu, gi, &dev));
  out->gpu.mig_devices.push_back(std::move(dev));
  out->mig_uuids.push_back(uuid);
  return absl::OkStatus();
}

absl::Status ReadMigDevices(const Ctx& ctx, const Field& field,
                            ParsedGpu* out) {
  const Gpu& gpu = out->gpu;
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          yaml::ReadList(ctx, field, kMaxSlots * kMaxSlots));
  if (items.empty()) return absl::OkStatus();
  if (!gpu.mig_capable || !gpu.mig_enabled) {
    return yaml::FieldError(
        ctx, field,
        gpu.mig_capable ? "MIG devices on a GPU whose MIG mode is disabled"
                        : "MIG devices on a GPU that is not MIG-capable");
  }
  if (items.size() > gpu.max_mig_devices) {
    return yaml::FieldError(
        ctx, field,
        absl::StrCat(items.size(), " MIG devices; ", gpu.name,
                     " supports at most ", gpu.max_mig_devices));
  }
  std::map<unsigned, GpuInstanceUse> uses;
  for (const Field& item : items) {
    GPULET_RETURN_IF_ERROR(ReadMigDevice(ctx, item, &uses, out));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseMig(const Ctx& ctx, const MapView& gpu_map,
                      const GpuModel* model, ParsedGpu* out) {
  Gpu& gpu = out->gpu;
  if (model != nullptr) {
    gpu.mig_capable = model->mig_capable;
    gpu.max_mig_devices = model->max_mig_devices;
    gpu.gi_profiles = model->gi_profiles;
    gpu.ci_profiles = model->ci_profiles;
  }
  std::optional<Field> field = gpu_map.Find("mig");
  if (!field) return absl::OkStatus();
  GPULET_ASSIGN_OR_RETURN(
      MapView map, MapView::Read(ctx, *field,
                                 {"capable", "mode", "pending", "maxDevices",
                                  "giProfiles", "ciProfiles", "devices"}));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "capable", &gpu.mig_capable,
      [&](const Field& f) { return yaml::ReadBool(ctx, f); }));
  auto read_mode = [&](const Field& f) { return ReadMode(ctx, f); };
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "mode", &gpu.mig_enabled, read_mode));
  gpu.mig_pending = gpu.mig_enabled;
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "pending", &gpu.mig_pending, read_mode));
  if (!gpu.mig_capable && (gpu.mig_enabled || gpu.mig_pending)) {
    return yaml::FieldError(ctx,
                            *map.Find(gpu.mig_enabled ? "mode" : "pending"),
                            "MIG enabled on a GPU that is not MIG-capable");
  }
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "maxDevices", &gpu.max_mig_devices, UintReader(ctx, 1, 7)));
  GPULET_RETURN_IF_ERROR(ParseMigTables(ctx, map, &gpu));
  if (!gpu.mig_capable) {
    gpu.max_mig_devices = 0;
  } else if (gpu.gi_profiles.empty() || gpu.ci_profiles.empty() ||
             gpu.max_mig_devices == 0) {
    return yaml::FieldError(
        ctx, *field,
        absl::StrCat("no MIG profile tables for ", gpu.name,
                     ": set model, or giProfiles, ciProfiles and maxDevices"));
  }
  if (std::optional<Field> devices = map.Find("devices")) {
    return ReadMigDevices(ctx, *devices, out);
  }
  return absl::OkStatus();
}

}  // namespace gpulet::sim::parser
