// The passthrough keys of a GPU entry: the driver it is bound to, its IOMMU
// group, the other functions of that group, and its vGPU (mdev) types and
// instances. Rendered as sysfs by node_render; see docs/machine-file.md.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "sim/gpu_parser.h"
#include "src/base/common/status_macros.h"

namespace gpulet::sim::parser {
namespace {

using yaml::Ctx;
using yaml::Field;
using yaml::MapView;

constexpr size_t kMaxFunctions = 16;
constexpr size_t kMaxMdevTypes = 64;
constexpr size_t kMaxMdevs = 64;
constexpr int kMaxIommuGroup = 4095;

// A kernel module or driver name: [a-z0-9_-], at most 64 characters; empty
// means unbound.
absl::StatusOr<std::string> ReadDriverName(const Ctx& ctx, const Field& field) {
  GPULET_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(ctx, field, 64));
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (!absl::ascii_islower(u) && !absl::ascii_isdigit(u) && c != '_' &&
        c != '-') {
      return yaml::FieldError(
          ctx, field,
          absl::StrCat("malformed driver name \"", absl::CHexEscape(text),
                       "\" (expected [a-z0-9_-], or \"\" for unbound)"));
    }
  }
  return text;
}

// "0000:1b:00.1" in the sysfs form (4-digit domain, lower case).
absl::StatusOr<std::string> ReadSysfsAddress(const Ctx& ctx,
                                             const Field& field) {
  GPULET_ASSIGN_OR_RETURN(std::string nvml, ParseBusId(ctx, field));
  return absl::AsciiStrToLower(nvml.substr(4));
}

absl::StatusOr<PciFunction> ParseFunction(const Ctx& ctx, const Field& item) {
  GPULET_ASSIGN_OR_RETURN(
      MapView map,
      MapView::Read(ctx, item,
                    {"address", "vendor", "device", "class", "driver"}));
  PciFunction fn;
  GPULET_ASSIGN_OR_RETURN(Field address, map.Require("address"));
  GPULET_ASSIGN_OR_RETURN(fn.address, ReadSysfsAddress(ctx, address));
  auto read16 = [&](const Field& f) {
    return yaml::ReadUint(ctx, f, 0, 0xFFFF);
  };
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(map, "vendor", &fn.vendor, read16));
  GPULET_ASSIGN_OR_RETURN(Field device, map.Require("device"));
  GPULET_ASSIGN_OR_RETURN(uint64_t device_id, read16(device));
  fn.device = static_cast<uint16_t>(device_id);
  GPULET_ASSIGN_OR_RETURN(Field class_field, map.Require("class"));
  GPULET_ASSIGN_OR_RETURN(uint64_t class_code,
                          yaml::ReadUint(ctx, class_field, 0, 0xFFFFFF));
  fn.class_code = static_cast<uint32_t>(class_code);
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "driver", &fn.driver,
      [&](const Field& f) { return ReadDriverName(ctx, f); }));
  return fn;
}

absl::Status ParseFunctions(const Ctx& ctx, const MapView& map, Gpu* gpu) {
  std::optional<Field> field = map.Find("functions");
  if (!field) return absl::OkStatus();
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          yaml::ReadList(ctx, *field, kMaxFunctions));
  for (const Field& item : items) {
    GPULET_ASSIGN_OR_RETURN(PciFunction fn, ParseFunction(ctx, item));
    gpu->functions.push_back(std::move(fn));
  }
  return absl::OkStatus();
}

// An mdev type ID as the NVIDIA vGPU manager names them: "nvidia-558".
absl::StatusOr<std::string> ReadTypeId(const Ctx& ctx, const Field& field) {
  GPULET_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(ctx, field, 64));
  bool ok = !text.empty();
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    ok = ok && (absl::ascii_isalnum(u) || c == '-' || c == '_');
  }
  if (!ok) {
    return yaml::FieldError(
        ctx, field,
        absl::StrCat("malformed mdev type \"", absl::CHexEscape(text),
                     "\" (expected [A-Za-z0-9_-], such as nvidia-558)"));
  }
  return text;
}

// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" in hex, returned in lower case as
// sysfs names mdevs.
absl::StatusOr<std::string> ReadMdevUuid(const Ctx& ctx, const Field& field) {
  GPULET_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(ctx, field, 64));
  bool ok = text.size() == 36;
  for (size_t i = 0; ok && i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    ok = dash ? text[i] == '-'
              : absl::ascii_isxdigit(static_cast<unsigned char>(text[i]));
  }
  if (!ok) {
    return yaml::FieldError(
        ctx, field,
        absl::StrCat(
            "malformed mdev UUID \"", absl::CHexEscape(text),
            "\" (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in hex)"));
  }
  return absl::AsciiStrToLower(text);
}

absl::Status ParseMdevTypes(const Ctx& ctx, const MapView& map, Gpu* gpu) {
  std::optional<Field> field = map.Find("mdevTypes");
  if (!field) return absl::OkStatus();
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          yaml::ReadList(ctx, *field, kMaxMdevTypes));
  std::set<std::string> seen;
  for (const Field& item : items) {
    GPULET_ASSIGN_OR_RETURN(
        MapView type_map,
        MapView::Read(ctx, item, {"id", "name", "available"}));
    MdevType type;
    GPULET_ASSIGN_OR_RETURN(Field id, type_map.Require("id"));
    GPULET_ASSIGN_OR_RETURN(type.id, ReadTypeId(ctx, id));
    if (!seen.insert(type.id).second) {
      return yaml::FieldError(ctx, id, "duplicate mdev type " + type.id);
    }
    GPULET_ASSIGN_OR_RETURN(Field name, type_map.Require("name"));
    GPULET_ASSIGN_OR_RETURN(type.name, yaml::ReadString(ctx, name, 64));
    GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
        type_map, "available", &type.available,
        [&](const Field& f) { return yaml::ReadUint(ctx, f, 0, 64); }));
    gpu->mdev_types.push_back(std::move(type));
  }
  return absl::OkStatus();
}

absl::Status ParseMdevs(const Ctx& ctx, const MapView& map, Gpu* gpu,
                        std::vector<Field>* uuid_fields) {
  std::optional<Field> field = map.Find("mdevs");
  if (!field) return absl::OkStatus();
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          yaml::ReadList(ctx, *field, kMaxMdevs));
  for (const Field& item : items) {
    GPULET_ASSIGN_OR_RETURN(MapView mdev_map,
                            MapView::Read(ctx, item, {"uuid", "type"}));
    Mdev mdev;
    GPULET_ASSIGN_OR_RETURN(Field uuid, mdev_map.Require("uuid"));
    GPULET_ASSIGN_OR_RETURN(mdev.uuid, ReadMdevUuid(ctx, uuid));
    GPULET_ASSIGN_OR_RETURN(Field type, mdev_map.Require("type"));
    GPULET_ASSIGN_OR_RETURN(mdev.type, ReadTypeId(ctx, type));
    bool known = false;
    for (const MdevType& t : gpu->mdev_types)
      known = known || t.id == mdev.type;
    if (!known) {
      return yaml::FieldError(ctx, type,
                              absl::StrCat("mdev type ", mdev.type,
                                           " is not in the GPU's mdevTypes"));
    }
    gpu->mdevs.push_back(std::move(mdev));
    uuid_fields->push_back(uuid);
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& PassthroughKeys() {
  static const std::vector<std::string> keys = {
      "boundDriver", "iommuGroup", "functions", "mdevTypes", "mdevs"};
  return keys;
}

absl::Status ParsePassthrough(const Ctx& ctx, const MapView& map,
                              ParsedGpu* out) {
  Gpu& gpu = out->gpu;
  if (std::optional<Field> field = map.Find("boundDriver")) {
    GPULET_ASSIGN_OR_RETURN(gpu.bound_driver, ReadDriverName(ctx, *field));
  }
  out->iommu_group = map.Find("iommuGroup");
  if (out->iommu_group) {
    GPULET_ASSIGN_OR_RETURN(
        gpu.iommu_group,
        yaml::ReadInt(ctx, *out->iommu_group, 0, kMaxIommuGroup));
  }
  if (std::optional<Field> field = map.Find("functions")) {
    out->functions = *field;
  }
  GPULET_RETURN_IF_ERROR(ParseFunctions(ctx, map, &gpu));
  GPULET_RETURN_IF_ERROR(ParseMdevTypes(ctx, map, &gpu));
  return ParseMdevs(ctx, map, &gpu, &out->mdev_uuids);
}

absl::Status CheckPassthrough(const Ctx& ctx,
                              const std::vector<ParsedGpu>& gpus) {
  std::map<std::string, std::string> addresses;
  std::map<std::string, std::string> uuids;
  auto claim = [&](std::map<std::string, std::string>* seen,
                   const std::string& key, const Field& field,
                   absl::string_view what) -> absl::Status {
    auto [it, inserted] = seen->emplace(key, field.path);
    if (inserted) return absl::OkStatus();
    return yaml::FieldError(ctx, field,
                            absl::StrCat("duplicate ", what, " ", key,
                                         " (also at ", it->second, ")"));
  };
  for (const ParsedGpu& p : gpus) {
    GPULET_RETURN_IF_ERROR(claim(&addresses,
                                 absl::AsciiStrToLower(p.gpu.bus_id.substr(4)),
                                 p.bus_id, "PCI address"));
    for (size_t i = 0; i < p.gpu.functions.size(); ++i) {
      const YAML::Node& list = p.functions->node;
      const Field item{list[i]["address"],
                       yaml::IndexPath(p.functions->path, i) + ".address"};
      GPULET_RETURN_IF_ERROR(
          claim(&addresses, p.gpu.functions[i].address, item, "PCI address"));
    }
    for (size_t i = 0; i < p.gpu.mdevs.size(); ++i) {
      GPULET_RETURN_IF_ERROR(
          claim(&uuids, p.gpu.mdevs[i].uuid, p.mdev_uuids[i], "mdev UUID"));
    }
  }
  for (const ParsedGpu& p : gpus) {
    for (size_t k = 0; k < p.gpu.nvlinks.size(); ++k) {
      const int peer = p.gpu.nvlinks[k].peer_gpu;
      if (peer < 0) continue;
      const bool here = p.gpu.bound_driver == "nvidia";
      const bool there =
          gpus[static_cast<size_t>(peer)].gpu.bound_driver == "nvidia";
      if (here != there) {
        return yaml::FieldError(
            ctx, p.links[k],
            absl::StrCat("an NVLink between a GPU bound to nvidia and GPU ",
                         peer,
                         " bound to another driver; NVML sees only one "
                         "end (drop the link or bind both alike)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace gpulet::sim::parser
