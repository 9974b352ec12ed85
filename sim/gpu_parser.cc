#include "sim/gpu_parser.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace gpulet::sim::parser {
namespace {

using yaml::Ctx;
using yaml::Field;
using yaml::MapView;

constexpr uint64_t kMaxMemory = uint64_t{1} << 40;  // 1 TiB

const std::vector<std::pair<std::string, nvmlDeviceArchitecture_t>>&
ArchitectureNames() {
  static const std::vector<std::pair<std::string, nvmlDeviceArchitecture_t>>
      names = {{"kepler", NVML_DEVICE_ARCH_KEPLER},
               {"maxwell", NVML_DEVICE_ARCH_MAXWELL},
               {"pascal", NVML_DEVICE_ARCH_PASCAL},
               {"volta", NVML_DEVICE_ARCH_VOLTA},
               {"turing", NVML_DEVICE_ARCH_TURING},
               {"ampere", NVML_DEVICE_ARCH_AMPERE},
               {"ada", NVML_DEVICE_ARCH_ADA},
               {"hopper", NVML_DEVICE_ARCH_HOPPER},
               {"blackwell", NVML_DEVICE_ARCH_BLACKWELL},
               {"orin", NVML_DEVICE_ARCH_T23X},
               {"rubin", NVML_DEVICE_ARCH_RUBIN},
               {"unknown", NVML_DEVICE_ARCH_UNKNOWN}};
  return names;
}

const std::vector<std::pair<std::string, nvmlBrandType_t>>& BrandNames() {
  static const std::vector<std::pair<std::string, nvmlBrandType_t>> names = {
      {"unknown", NVML_BRAND_UNKNOWN},
      {"quadro", NVML_BRAND_QUADRO},
      {"tesla", NVML_BRAND_TESLA},
      {"nvs", NVML_BRAND_NVS},
      {"grid", NVML_BRAND_GRID},
      {"geforce", NVML_BRAND_GEFORCE},
      {"titan", NVML_BRAND_TITAN},
      {"nvidia-vapps", NVML_BRAND_NVIDIA_VAPPS},
      {"nvidia-vpc", NVML_BRAND_NVIDIA_VPC},
      {"nvidia-vcs", NVML_BRAND_NVIDIA_VCS},
      {"nvidia-vws", NVML_BRAND_NVIDIA_VWS},
      {"nvidia-cloud-gaming", NVML_BRAND_NVIDIA_CLOUD_GAMING},
      {"quadro-rtx", NVML_BRAND_QUADRO_RTX},
      {"nvidia-rtx", NVML_BRAND_NVIDIA_RTX},
      {"nvidia", NVML_BRAND_NVIDIA},
      {"geforce-rtx", NVML_BRAND_GEFORCE_RTX},
      {"titan-rtx", NVML_BRAND_TITAN_RTX}};
  return names;
}

const std::vector<std::pair<std::string, uint64_t>>& EventNames() {
  static const std::vector<std::pair<std::string, uint64_t>> names = {
      {"sbe", nvmlEventTypeSingleBitEccError},
      {"dbe", nvmlEventTypeDoubleBitEccError},
      {"pstate", nvmlEventTypePState},
      {"xid", nvmlEventTypeXidCriticalError},
      {"clock", nvmlEventTypeClock},
      {"powerSource", nvmlEventTypePowerSourceChange},
      {"migConfigChange", nvmlEventMigConfigChange},
      {"sbeStorm", nvmlEventTypeSingleBitEccErrorStorm},
      {"dramRetirement", nvmlEventTypeDramRetirementEvent},
      {"dramRetirementFailure", nvmlEventTypeDramRetirementFailure},
      {"nonFatalPoison", nvmlEventTypeNonFatalPoisonError},
      {"fatalPoison", nvmlEventTypeFatalPoisonError},
      {"gpuUnavailable", nvmlEventTypeGpuUnavailableError},
      {"gpuRecoveryAction", nvmlEventTypeGpuRecoveryAction}};
  return names;
}

constexpr uint64_t kDefaultEvents =
    nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError |
    nvmlEventTypePState | nvmlEventTypeXidCriticalError | nvmlEventTypeClock |
    nvmlEventTypePowerSourceChange;

void ApplyModel(const GpuModel& model, Gpu* gpu) {
  gpu->name = model.name;
  gpu->pci_device_id = model.pci_device_id;
  gpu->pci_subsystem_id = model.pci_subsystem_id;
  gpu->memory_total = model.memory_total;
  gpu->cc_major = model.cc_major;
  gpu->cc_minor = model.cc_minor;
  gpu->architecture = model.architecture;
  gpu->brand = model.brand;
  gpu->multiprocessor_count = model.multiprocessor_count;
}

// Real boards print a 13-digit serial; derive a stable one from the UUID.
std::string SerialFromUuid(absl::string_view uuid) {
  uint64_t hash = 1469598103934665603ull;
  for (char c : uuid) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  }
  return absl::StrFormat("1%012u", hash % 1000000000000ull);
}

absl::StatusOr<const GpuModel*> ResolveModel(const Ctx& ctx,
                                             const MapView& map) {
  if (std::optional<Field> field = map.Find("model")) {
    GPULET_ASSIGN_OR_RETURN(std::string key, yaml::ReadString(ctx, *field));
    const GpuModel* model = FindGpuModel(key);
    if (model == nullptr) {
      return yaml::FieldError(
          ctx, *field,
          absl::StrCat("unknown GPU model \"", absl::CHexEscape(key),
                       "\" (known: ", GpuModelKeys(), ")"));
    }
    return model;
  }
  if (std::optional<Field> field = map.Find("name");
      field && field->node.IsScalar()) {
    return FindGpuModel(field->node.Scalar());
  }
  return nullptr;
}

absl::StatusOr<std::pair<int, int>> ReadComputeCapability(const Ctx& ctx,
                                                          const Field& field) {
  GPULET_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(ctx, field, 8));
  std::vector<std::string> parts = absl::StrSplit(text, '.');
  int major = 0;
  int minor = 0;
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 2 &&
           std::all_of(s.begin(), s.end(), [](char c) {
             return absl::ascii_isdigit(static_cast<unsigned char>(c));
           });
  };
  if (parts.size() != 2 || !digits(parts[0]) || !digits(parts[1]) ||
      !absl::SimpleAtoi(parts[0], &major) ||
      !absl::SimpleAtoi(parts[1], &minor) || major < 1 || major > 20 ||
      minor > 9) {
    return yaml::FieldError(
        ctx, field,
        absl::StrCat("expected a compute capability such as \"8.0\" (major "
                     "1-20, minor 0-9), got \"",
                     absl::CHexEscape(text), "\""));
  }
  return std::make_pair(major, minor);
}

absl::StatusOr<uint32_t> ReadPciDeviceId(const Ctx& ctx, const Field& field) {
  GPULET_ASSIGN_OR_RETURN(uint64_t id,
                          yaml::ReadUint(ctx, field, 1, 0xFFFFFFFFu));
  // A bare 16-bit device ID gets NVIDIA's vendor ID, as NVML reports it.
  if (id <= 0xFFFF) return static_cast<uint32_t>(id << 16 | 0x10DE);
  return static_cast<uint32_t>(id);
}

absl::Status ParseIdentity(const Ctx& ctx, const MapView& map, size_t index,
                           ParsedGpu* out) {
  Gpu& gpu = out->gpu;
  GPULET_ASSIGN_OR_RETURN(out->uuid, map.Require("uuid"));
  GPULET_ASSIGN_OR_RETURN(gpu.uuid, ParseUuid(ctx, out->uuid, "GPU"));
  GPULET_ASSIGN_OR_RETURN(out->bus_id, map.Require("busId"));
  GPULET_ASSIGN_OR_RETURN(gpu.bus_id, ParseBusId(ctx, out->bus_id));
  gpu.minor = static_cast<unsigned>(index);
  out->minor = map.Find("minor");
  if (out->minor) {
    GPULET_ASSIGN_OR_RETURN(gpu.minor,
                            yaml::ReadUint(ctx, *out->minor, 0, 254));
  }
  gpu.serial = SerialFromUuid(gpu.uuid);
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "serial", &gpu.serial,
      [&](const Field& f) { return yaml::ReadString(ctx, f, 29); }));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "numaNode", &gpu.numa_node,
      [&](const Field& f) { return yaml::ReadInt(ctx, f, -1, 1023); }));
  return yaml::ReadOptional(
      map, "cpuAffinity", &gpu.cpu_affinity,
      [&](const Field& f) { return yaml::ReadIndexList(ctx, f, kMaxCpu); });
}

absl::Status ParseMemory(const Ctx& ctx, const MapView& map, Gpu* gpu) {
  auto read = [&](const Field& f) {
    return yaml::ReadBytes(ctx, f, kMaxMemory);
  };
  std::optional<Field> memory = map.Find("memory");
  if (memory) {
    GPULET_ASSIGN_OR_RETURN(gpu->memory_total, read(*memory));
    if (gpu->memory_total == 0) {
      return yaml::FieldError(ctx, *memory, "GPU memory must not be 0");
    }
  } else if (gpu->memory_total == 0) {
    return map.Require("memory").status();
  }
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "memoryReserved", &gpu->memory_reserved, read));
  gpu->memory_used = gpu->memory_reserved;
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "memoryUsed", &gpu->memory_used, read));
  std::optional<Field> reserved = map.Find("memoryReserved");
  if (reserved && gpu->memory_reserved > gpu->memory_total) {
    return yaml::FieldError(ctx, *reserved, "exceeds the GPU's memory");
  }
  std::optional<Field> used = map.Find("memoryUsed");
  if (used && (gpu->memory_used > gpu->memory_total ||
               gpu->memory_used < gpu->memory_reserved)) {
    return yaml::FieldError(
        ctx, *used, "must lie between memoryReserved and the GPU's memory");
  }
  return absl::OkStatus();
}

absl::Status ParseHardware(const Ctx& ctx, const MapView& map,
                           const GpuModel* model, Gpu* gpu) {
  if (model != nullptr) ApplyModel(*model, gpu);
  if (model == nullptr || map.Has("name")) {
    GPULET_ASSIGN_OR_RETURN(Field name, map.Require("name"));
    GPULET_ASSIGN_OR_RETURN(gpu->name, yaml::ReadString(ctx, name, 95));
    if (gpu->name.empty()) return yaml::FieldError(ctx, name, "is empty");
  }
  GPULET_RETURN_IF_ERROR(ParseMemory(ctx, map, gpu));
  auto read_pci = [&](const Field& f) { return ReadPciDeviceId(ctx, f); };
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "pciDeviceId", &gpu->pci_device_id, read_pci));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "pciSubsystemId", &gpu->pci_subsystem_id,
      [&](const Field& f) { return yaml::ReadUint(ctx, f, 0, 0xFFFFFFFFu); }));
  if (std::optional<Field> cc = map.Find("computeCapability")) {
    GPULET_ASSIGN_OR_RETURN(auto version, ReadComputeCapability(ctx, *cc));
    gpu->cc_major = version.first;
    gpu->cc_minor = version.second;
  }
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "architecture", &gpu->architecture, [&](const Field& f) {
        return yaml::ReadEnum(ctx, f, ArchitectureNames());
      }));
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "brand", &gpu->brand,
      [&](const Field& f) { return yaml::ReadEnum(ctx, f, BrandNames()); }));
  return yaml::ReadOptional(
      map, "multiprocessors", &gpu->multiprocessor_count,
      [&](const Field& f) { return yaml::ReadUint(ctx, f, 1, 1024); });
}

absl::Status ParseEvents(const Ctx& ctx, const MapView& map, Gpu* gpu) {
  gpu->supported_events = kDefaultEvents;
  if (gpu->mig_capable) gpu->supported_events |= nvmlEventMigConfigChange;
  std::optional<Field> field = map.Find("events");
  if (!field) return absl::OkStatus();
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          yaml::ReadList(ctx, *field, 32));
  gpu->supported_events = 0;
  for (const Field& item : items) {
    GPULET_ASSIGN_OR_RETURN(uint64_t bit,
                            yaml::ReadEnum(ctx, item, EventNames()));
    gpu->supported_events |= bit;
  }
  return absl::OkStatus();
}

absl::Status ParseLink(const Ctx& ctx, const Field& item, size_t index,
                       size_t gpu_count, ParsedGpu* out) {
  GPULET_ASSIGN_OR_RETURN(
      MapView map,
      MapView::Read(ctx, item, {"gpu", "nvswitch", "count", "active"}));
  std::optional<Field> peer = map.Find("gpu");
  std::optional<Field> nvswitch = map.Find("nvswitch");
  if (peer.has_value() == nvswitch.has_value()) {
    return yaml::FieldError(ctx, item,
                            "a link needs exactly one of gpu (peer GPU index) "
                            "or nvswitch (switch PCI bus ID)");
  }
  NvLink link;
  Field switch_field{YAML::Node(), ""};
  if (peer) {
    if (gpu_count == 0)
      return yaml::FieldError(ctx, *peer, "no GPUs to link to");
    GPULET_ASSIGN_OR_RETURN(uint64_t peer_index,
                            yaml::ReadUint(ctx, *peer, 0, gpu_count - 1));
    if (peer_index == index) {
      return yaml::FieldError(ctx, *peer, "a GPU cannot link to itself");
    }
    link.peer_gpu = static_cast<int>(peer_index);
  } else {
    link.remote_type = NVML_NVLINK_DEVICE_TYPE_SWITCH;
    GPULET_ASSIGN_OR_RETURN(link.remote_bus_id, ParseBusId(ctx, *nvswitch));
    switch_field = *nvswitch;
  }
  GPULET_RETURN_IF_ERROR(yaml::ReadOptional(
      map, "active", &link.active,
      [&](const Field& f) { return yaml::ReadBool(ctx, f); }));
  uint64_t count = 1;
  GPULET_RETURN_IF_ERROR(
      yaml::ReadOptional(map, "count", &count, [&](const Field& f) {
        return yaml::ReadUint(ctx, f, 1, NVML_NVLINK_MAX_LINKS);
      }));
  if (out->gpu.nvlinks.size() + count > NVML_NVLINK_MAX_LINKS) {
    return yaml::FieldError(
        ctx, item,
        absl::StrCat("brings the GPU to ", out->gpu.nvlinks.size() + count,
                     " NVLinks; at most ", NVML_NVLINK_MAX_LINKS));
  }
  for (uint64_t i = 0; i < count; ++i) {
    out->gpu.nvlinks.push_back(link);
    out->links.push_back(item);
    out->switch_bus_ids.push_back(switch_field);
  }
  return absl::OkStatus();
}

absl::Status ParseNvLinks(const Ctx& ctx, const MapView& map, size_t index,
                          size_t gpu_count, ParsedGpu* out) {
  std::optional<Field> field = map.Find("nvlinks");
  if (!field) return absl::OkStatus();
  GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                          yaml::ReadList(ctx, *field, NVML_NVLINK_MAX_LINKS));
  for (const Field& item : items) {
    GPULET_RETURN_IF_ERROR(ParseLink(ctx, item, index, gpu_count, out));
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& GpuKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out = {
        "uuid",         "busId",       "minor",           "serial",
        "model",        "name",        "memory",          "memoryReserved",
        "memoryUsed",   "pciDeviceId", "pciSubsystemId",  "computeCapability",
        "architecture", "brand",       "multiprocessors", "numaNode",
        "cpuAffinity",  "nvlinks",     "events",          "mig",
        "fabric"};
    for (const std::string& key : PassthroughKeys()) out.push_back(key);
    return out;
  }();
  return keys;
}

const std::vector<std::string>& GpuDefaultKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const std::string& key : GpuKeys()) {
      // Identity and group membership belong to one GPU each.
      if (key != "uuid" && key != "busId" && key != "minor" &&
          key != "serial" && key != "iommuGroup" && key != "functions" &&
          key != "mdevs") {
        out.push_back(key);
      }
    }
    return out;
  }();
  return keys;
}

absl::StatusOr<ParsedGpu> ParseGpu(const Ctx& ctx, const Field& field,
                                   const MapView* defaults, size_t index,
                                   size_t gpu_count) {
  GPULET_ASSIGN_OR_RETURN(MapView map, MapView::Read(ctx, field, GpuKeys()));
  map.SetFallback(defaults);
  ParsedGpu out;
  out.self = field;
  GPULET_ASSIGN_OR_RETURN(const GpuModel* model, ResolveModel(ctx, map));
  GPULET_RETURN_IF_ERROR(ParseIdentity(ctx, map, index, &out));
  GPULET_RETURN_IF_ERROR(ParseHardware(ctx, map, model, &out.gpu));
  GPULET_RETURN_IF_ERROR(ParseMig(ctx, map, model, &out));
  GPULET_RETURN_IF_ERROR(ParseEvents(ctx, map, &out.gpu));
  GPULET_RETURN_IF_ERROR(ParseNvLinks(ctx, map, index, gpu_count, &out));
  GPULET_RETURN_IF_ERROR(ParseFabric(ctx, map, &out.gpu));
  GPULET_RETURN_IF_ERROR(ParsePassthrough(ctx, map, &out));
  if (!out.iommu_group) out.gpu.iommu_group = static_cast<int>(index);
  return out;
}

}  // namespace gpulet::sim::parser
