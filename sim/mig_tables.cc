// MIG profile tables given in a machine file (`mig.giProfiles`,
// `mig.ciProfiles`) for GPUs whose model the simulator does not know.
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sim/gpu_parser.h"

namespace gpulet::sim::parser {
namespace {

using yaml::Ctx;
using yaml::Field;
using yaml::MapView;

constexpr unsigned kMaxSlots = 8;

auto UintReader(const Ctx& ctx, uint64_t min, uint64_t max) {
  return [&ctx, min, max](const Field& f) {
    return yaml::ReadUint(ctx, f, min, max);
  };
}

// The optional SM and engine counts of a GPU instance profile.
absl::Status ReadGiEngines(const Ctx& ctx, const MapView& map,
                           GpuInstanceProfile* out) {
  GpuInstanceProfile& p = *out;
  auto small = UintReader(ctx, 0, 1024);
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(map, "multiprocessors",
                                            &p.multiprocessor_count, small));
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "copyEngines", &p.copy_engine_count, small));
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "decoders", &p.decoder_count, small));
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "encoders", &p.encoder_count, small));
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "jpegs", &p.jpeg_count, small));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(map, "ofas", &p.ofa_count, small));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "p2p", &p.p2p_supported,
      [&](const Field& f) { return yaml::ReadBool(ctx, f); }));
  return absl::OkStatus();
}

absl::Status ReadGiPlacements(const Ctx& ctx, const MapView& map,
                              GpuInstanceProfile* out) {
  GpuInstanceProfile& p = *out;
  p.placement_size = p.slice_count;
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "placementSize", &p.placement_size, UintReader(ctx, 1, kMaxSlots)));
  GPULET_ASSIGN_OR_RETURN(Field placements, map.Require("placements"));
  GPULET_ASSIGN_OR_RETURN(p.placement_starts,
                          yaml::ReadIndexList(ctx, placements, kMaxSlots - 1));
  for (unsigned start : p.placement_starts) {
    if (start + p.placement_size > kMaxSlots) {
      return yaml::FieldError(
          ctx, placements,
          absl::StrCat("placement ", start, " of size ", p.placement_size,
                       " exceeds ", kMaxSlots, " slots"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<GpuInstanceProfile> ReadGiProfile(const Ctx& ctx,
                                                 const Field& item) {
  GPULET_ASSIGN_OR_RETURN(
      MapView map,
      MapView::Read(
          ctx, item,
          {"id", "profileId", "name", "slices", "instances", "multiprocessors",
           "memory", "copyEngines", "decoders", "encoders", "jpegs", "ofas",
           "p2p", "placements", "placementSize"}));
  GpuInstanceProfile p;
  GPULET_ASSIGN_OR_RETURN(Field id, map.Require("id"));
  GPULET_ASSIGN_OR_RETURN(
      p.id, yaml::ReadUint(ctx, id, 0, NVML_GPU_INSTANCE_PROFILE_COUNT - 1));
  p.profile_id = p.id;
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(map, "profileId", &p.profile_id,
                                            UintReader(ctx, 0, 255)));
  GPULET_ASSIGN_OR_RETURN(Field name, map.Require("name"));
  GPULET_ASSIGN_OR_RETURN(p.name, yaml::ReadString(ctx, name, 40));
  GPULET_ASSIGN_OR_RETURN(Field slices, map.Require("slices"));
  GPULET_ASSIGN_OR_RETURN(p.slice_count,
                          yaml::ReadUint(ctx, slices, 1, kMaxSlots));
  GPULET_ASSIGN_OR_RETURN(Field instances, map.Require("instances"));
  GPULET_ASSIGN_OR_RETURN(p.instance_count,
                          yaml::ReadUint(ctx, instances, 1, kMaxSlots));
  GPULET_ASSIGN_OR_RETURN(Field memory, map.Require("memory"));
  GPULET_ASSIGN_OR_RETURN(uint64_t bytes,
                          yaml::ReadBytes(ctx, memory, uint64_t{1} << 40));
  p.memory_size_mb = bytes >> 20;
  GPULET_RETURN_IF_ERROR(ReadGiEngines(ctx, map, &p));
  GPULET_RETURN_IF_ERROR(ReadGiPlacements(ctx, map, &p));
  return p;
}

absl::StatusOr<ComputeInstanceProfile> ReadCiProfile(const Ctx& ctx,
                                                     const Field& item) {
  GPULET_ASSIGN_OR_RETURN(
      MapView map,
      MapView::Read(ctx, item,
                    {"id", "name", "slices", "instances", "multiprocessors"}));
  ComputeInstanceProfile p;
  GPULET_ASSIGN_OR_RETURN(Field id, map.Require("id"));
  GPULET_ASSIGN_OR_RETURN(
      p.id,
      yaml::ReadUint(ctx, id, 0, NVML_COMPUTE_INSTANCE_PROFILE_COUNT - 1));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "name", &p.name,
      [&](const Field& f) { return yaml::ReadString(ctx, f, 40); }));
  GPULET_ASSIGN_OR_RETURN(Field slices, map.Require("slices"));
  GPULET_ASSIGN_OR_RETURN(p.slice_count,
                          yaml::ReadUint(ctx, slices, 1, kMaxSlots));
  GPULET_ASSIGN_OR_RETURN(Field instances, map.Require("instances"));
  GPULET_ASSIGN_OR_RETURN(p.instance_count,
                          yaml::ReadUint(ctx, instances, 1, kMaxSlots));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(map, "multiprocessors",
                                            &p.multiprocessor_count,
                                            UintReader(ctx, 0, 1024)));
  return p;
}

// Reads a profile table, rejecting duplicate ids (and names, when `name_of`
// gives one).
template <typename Profile, typename ReadFn>
absl::Status ReadTable(const Ctx& ctx, const Field& field, ReadFn read,
                       std::vector<Profile>* out) {
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          yaml::ReadList(ctx, field, 16));
  out->clear();
  for (const Field& item : items) {
    GPULET_ASSIGN_OR_RETURN(Profile p, read(ctx, item));
    for (const Profile& other : *out) {
      if (other.id == p.id) {
        return yaml::FieldError(ctx, item,
                                absl::StrCat("duplicate profile id ", p.id));
      }
      if (!p.name.empty() && absl::EqualsIgnoreCase(other.name, p.name)) {
        return yaml::FieldError(
            ctx, item, absl::StrCat("duplicate profile name ", p.name));
      }
    }
    out->push_back(std::move(p));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseMigTables(const Ctx& ctx, const MapView& mig_map, Gpu* gpu) {
  if (std::optional<Field> gi = mig_map.Find("giProfiles")) {
    GPULET_RETURN_IF_ERROR(
        ReadTable(ctx, *gi, ReadGiProfile, &gpu->gi_profiles));
  }
  if (std::optional<Field> ci = mig_map.Find("ciProfiles")) {
    GPULET_RETURN_IF_ERROR(
        ReadTable(ctx, *ci, ReadCiProfile, &gpu->ci_profiles));
  }
  return absl::OkStatus();
}

}  // namespace gpulet::sim::parser
