#include "src/gpu/device/discovery.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/file_util.h"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"
#include "src/gpu/device/mig_profile.h"
#include "src/gpu/device/nvml_error_kind.h"
#include "src/gpu/device/pci_address.h"
#include "src/gpu/nvml/nvml_status.h"

namespace gpulet::device {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

absl::Status DiscoverSystem(nvml::Library& lib, Node& node) {
  GPULET_ASSIGN_OR_RETURN(node.driver_version, lib.SystemGetDriverVersion());
  GPULET_ASSIGN_OR_RETURN(node.nvml_version, lib.SystemGetNvmlVersion());
  GPULET_ASSIGN_OR_RETURN(node.cuda_driver_version,
                          lib.SystemGetCudaDriverVersion());
  return absl::OkStatus();
}

// `value` when OK, `fallback` when the call is unsupported, else the error.
template <typename T>
absl::StatusOr<T> Optional(absl::StatusOr<T> value, T fallback) {
  if (!value.ok() && IsNvmlUnsupported(value.status())) return fallback;
  return value;
}

absl::StatusOr<std::optional<int>> DiscoverNumaNode(
    nvml::Library& lib, nvml::Device handle, const std::string& bus_id,
    const DiscoveryOptions& options) {
  absl::StatusOr<unsigned> node = lib.DeviceGetNumaNodeId(handle);
  if (node.ok()) return std::optional<int>(static_cast<int>(*node));
  if (!IsNvmlUnsupported(node.status())) return node.status();
  return ReadSysfsNumaNode(options.sysfs_root, bus_id);
}

// Attributes such as "me" come from the GPU instance profile. Reading it may
// need privileges a plain CLI user lacks; the name is then reported without
// attributes (and the device without its placement) rather than failing the
// whole discovery. Sets `placement` when the GPU instance could be read.
absl::StatusOr<std::vector<std::string>> MigAttributes(
    nvml::Library& lib, nvml::Device parent, unsigned gi_id,
    std::optional<GiPlacement>& placement) {
  absl::StatusOr<nvml::GpuInstance> gi =
      lib.DeviceGetGpuInstanceById(parent, gi_id);
  absl::StatusOr<nvml::GpuInstanceInfo> info =
      gi.ok() ? lib.GpuInstanceGetInfo(*gi)
              : absl::StatusOr<nvml::GpuInstanceInfo>(gi.status());
  if (info.ok()) {
    placement = GiPlacement{.profile_id = info->profile_id,
                            .start = info->placement_start,
                            .size = info->placement_size};
    // GpuInstanceInfo names the profile by its unique ID (nvidia-smi's "ID");
    // the attributes follow from the NVML_GPU_INSTANCE_PROFILE_* index that
    // answers with that ID, found as go-nvlib does.
    for (unsigned index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
      absl::StatusOr<nvml::GpuInstanceProfileInfo> profile =
          lib.DeviceGetGpuInstanceProfileInfo(parent, index);
      if (profile.ok() && profile->id == info->profile_id) {
        return MigProfileAttributes(index);
      }
    }
    return std::vector<std::string>{};
  }
  if (IsNvmlNoPermission(info.status()) || IsNvmlUnsupported(info.status())) {
    GPULET_VLOG(1) << "MIG profile attributes unavailable: "
                   << info.status().message();
    return std::vector<std::string>{};
  }
  return info.status();
}

absl::StatusOr<MigDevice> DiscoverMigDevice(nvml::Library& lib,
                                            nvml::Device parent,
                                            nvml::Device handle, const Gpu& gpu,
                                            unsigned slot) {
  MigDevice mig;
  mig.parent_index = gpu.index;
  mig.mig_index = slot;
  GPULET_ASSIGN_OR_RETURN(mig.uuid, lib.DeviceGetUuid(handle));
  GPULET_ASSIGN_OR_RETURN(mig.gpu_instance_id,
                          lib.DeviceGetGpuInstanceId(handle));
  GPULET_ASSIGN_OR_RETURN(mig.compute_instance_id,
                          lib.DeviceGetComputeInstanceId(handle));
  GPULET_ASSIGN_OR_RETURN(nvmlDeviceAttributes_t attr,
                          lib.DeviceGetAttributes(handle));
  GPULET_ASSIGN_OR_RETURN(
      std::vector<std::string> attributes,
      MigAttributes(lib, parent, mig.gpu_instance_id, mig.gi_placement));
  mig.gi_slice_count = attr.gpuInstanceSliceCount;
  mig.ci_slice_count = attr.computeInstanceSliceCount;
  mig.multiprocessor_count = attr.multiprocessorCount;
  mig.copy_engine_count = attr.sharedCopyEngineCount;
  mig.decoder_count = attr.sharedDecoderCount;
  mig.encoder_count = attr.sharedEncoderCount;
  mig.jpeg_count = attr.sharedJpegCount;
  mig.ofa_count = attr.sharedOfaCount;
  mig.memory_bytes = attr.memorySizeMB * kMiB;
  mig.profile =
      MigProfileName(attr.gpuInstanceSliceCount, attr.computeInstanceSliceCount,
                     attr.memorySizeMB, gpu.memory_total_bytes, attributes);
  return mig;
}

absl::Status DiscoverMig(nvml::Library& lib, nvml::Device handle, Gpu& gpu) {
  absl::StatusOr<nvml::MigMode> mode = lib.DeviceGetMigMode(handle);
  if (!mode.ok()) {
    return IsNvmlUnsupported(mode.status()) ? absl::OkStatus() : mode.status();
  }
  gpu.mig_capable = true;
  gpu.mig_enabled = mode->current;
  if (!gpu.mig_enabled) return absl::OkStatus();
  GPULET_ASSIGN_OR_RETURN(unsigned slots,
                          lib.DeviceGetMaxMigDeviceCount(handle));
  for (unsigned slot = 0; slot < slots; ++slot) {
    absl::StatusOr<nvml::Device> mig_handle =
        lib.DeviceGetMigDeviceHandleByIndex(handle, slot);
    if (!mig_handle.ok() && IsNvmlNotFound(mig_handle.status())) continue;
    if (!mig_handle.ok()) return mig_handle.status();
    GPULET_ASSIGN_OR_RETURN(
        MigDevice mig, DiscoverMigDevice(lib, handle, *mig_handle, gpu, slot));
    gpu.mig_devices.push_back(std::move(mig));
  }
  return absl::OkStatus();
}

const char* FabricStateName(nvmlGpuFabricState_t state) {
  switch (state) {
    case NVML_GPU_FABRIC_STATE_NOT_STARTED:
      return "not-started";
    case NVML_GPU_FABRIC_STATE_IN_PROGRESS:
      return "in-progress";
    case NVML_GPU_FABRIC_STATE_COMPLETED:
      return "completed";
    default:
      return "unknown";
  }
}

const char* FabricHealthName(uint8_t summary) {
  switch (summary) {
    case NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY:
      return "healthy";
    case NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY:
      return "unhealthy";
    case NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY:
      return "limited-capacity";
    default:
      return "";
  }
}

// Fabric membership is informational: a GPU or driver without it (or one
// that answers NOT_SUPPORTED in the struct's state) has none.
absl::StatusOr<std::optional<GpuFabric>> DiscoverFabric(nvml::Library& lib,
                                                        nvml::Device handle) {
  absl::StatusOr<nvml::GpuFabricInfo> info = lib.DeviceGetGpuFabricInfo(handle);
  if (!info.ok()) {
    if (IsNvmlUnsupported(info.status())) return std::nullopt;
    return info.status();
  }
  if (info->state == NVML_GPU_FABRIC_STATE_NOT_SUPPORTED) return std::nullopt;
  GpuFabric fabric;
  fabric.cluster_uuid = info->cluster_uuid;
  fabric.clique_id = info->clique_id;
  fabric.state = FabricStateName(info->state);
  fabric.health = FabricHealthName(info->health_summary);
  if (info->state == NVML_GPU_FABRIC_STATE_COMPLETED &&
      info->status != NVML_SUCCESS) {
    fabric.error = nvml::NvmlReturnName(info->status);
  }
  return std::optional<GpuFabric>(std::move(fabric));
}

absl::Status DiscoverIdentity(nvml::Library& lib, nvml::Device handle,
                              Gpu& gpu) {
  GPULET_ASSIGN_OR_RETURN(gpu.uuid, lib.DeviceGetUuid(handle));
  GPULET_ASSIGN_OR_RETURN(gpu.name, lib.DeviceGetName(handle));
  GPULET_ASSIGN_OR_RETURN(gpu.serial,
                          Optional(lib.DeviceGetSerial(handle), std::string()));
  GPULET_ASSIGN_OR_RETURN(gpu.minor, lib.DeviceGetMinorNumber(handle));
  GPULET_ASSIGN_OR_RETURN(nvml::PciInfo pci, lib.DeviceGetPciInfo(handle));
  gpu.bus_id = CanonicalBusId(pci.bus_id);
  gpu.pci_device_id = pci.pci_device_id;
  GPULET_ASSIGN_OR_RETURN(nvml::MemoryInfo memory,
                          lib.DeviceGetMemoryInfo(handle));
  gpu.memory_total_bytes = memory.total;
  GPULET_ASSIGN_OR_RETURN(nvml::ComputeCapability cc,
                          lib.DeviceGetCudaComputeCapability(handle));
  gpu.cc_major = cc.major;
  gpu.cc_minor = cc.minor;
  GPULET_ASSIGN_OR_RETURN(
      nvmlDeviceArchitecture_t arch,
      Optional(lib.DeviceGetArchitecture(handle),
               nvmlDeviceArchitecture_t{NVML_DEVICE_ARCH_UNKNOWN}));
  gpu.architecture = ArchitectureName(arch);
  GPULET_ASSIGN_OR_RETURN(nvmlBrandType_t brand,
                          Optional(lib.DeviceGetBrand(handle),
                                   nvmlBrandType_t{NVML_BRAND_UNKNOWN}));
  gpu.brand = BrandName(brand);
  return absl::OkStatus();
}

absl::Status DiscoverGpuInto(nvml::Library& lib, unsigned index,
                             const DiscoveryOptions& options, Gpu& gpu) {
  gpu.index = index;
  GPULET_ASSIGN_OR_RETURN(nvml::Device handle,
                          lib.DeviceGetHandleByIndex(index));
  GPULET_RETURN_IF_ERROR(DiscoverIdentity(lib, handle, gpu));
  GPULET_ASSIGN_OR_RETURN(gpu.numa_node,
                          DiscoverNumaNode(lib, handle, gpu.bus_id, options));
  GPULET_ASSIGN_OR_RETURN(
      gpu.cpu_affinity,
      Optional(lib.DeviceGetCpuAffinity(handle), std::vector<unsigned>{}));
  GPULET_RETURN_IF_ERROR(DiscoverMig(lib, handle, gpu));
  GPULET_ASSIGN_OR_RETURN(gpu.fabric, DiscoverFabric(lib, handle));
  return absl::OkStatus();
}

// The record of a GPU whose discovery failed with `error` after filling
// `partial`: the previous session's record of the same GPU when there is
// one, else the partial one.
Gpu FailedGpu(Gpu partial, const absl::Status& error,
              const DiscoveryOptions& options) {
  Gpu gpu = std::move(partial);
  if (options.previous != nullptr) {
    for (const Gpu& known : options.previous->gpus) {
      if (known.index != gpu.index) continue;
      if (!gpu.uuid.empty() && known.uuid != gpu.uuid) break;
      gpu = known;
      break;
    }
  }
  gpu.failure = std::string(error.message());
  return gpu;
}

}  // namespace

std::optional<int> ReadSysfsNumaNode(const std::string& sysfs_root,
                                     const std::string& bus_id) {
  std::optional<PciAddress> address = ParsePciAddress(bus_id);
  if (!address) return std::nullopt;
  const std::string path = absl::StrCat(sysfs_root, "/bus/pci/devices/",
                                        SysfsBusId(*address), "/numa_node");
  absl::StatusOr<std::string> text = common::ReadFile(path);
  int node = -1;
  if (!text.ok() ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &node) || node < 0) {
    return std::nullopt;
  }
  return node;
}

std::optional<std::string> ReadSysfsPciClass(const std::string& sysfs_root,
                                             const std::string& bus_id) {
  std::optional<PciAddress> address = ParsePciAddress(bus_id);
  if (!address) return std::nullopt;
  absl::StatusOr<std::string> text = common::ReadFile(absl::StrCat(
      sysfs_root, "/bus/pci/devices/", SysfsBusId(*address), "/class"));
  if (!text.ok()) return std::nullopt;
  std::string pci_class(absl::StripAsciiWhitespace(*text));
  if (pci_class.empty()) return std::nullopt;
  return pci_class;
}

absl::StatusOr<Node> Discover(nvml::Library& lib,
                              const DiscoveryOptions& options) {
  Node node;
  GPULET_RETURN_IF_ERROR(DiscoverSystem(lib, node));
  GPULET_ASSIGN_OR_RETURN(unsigned count, lib.DeviceGetCount());
  node.gpus.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    Gpu gpu;
    absl::Status status = DiscoverGpuInto(lib, i, options, gpu);
    if (!status.ok()) {
      if (!options.tolerate_gpu_failures) return status;
      gpu = FailedGpu(std::move(gpu), status, options);
    }
    node.gpus.push_back(std::move(gpu));
  }
  return node;
}

}  // namespace gpulet::device
