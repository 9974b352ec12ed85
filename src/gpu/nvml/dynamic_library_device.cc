// DynamicLibrary: per-device identity and topology queries.
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <iterator>

#include "absl/strings/str_format.h"
#include "src/gpu/nvml/dynamic_library.h"

namespace gpulet::nvml {
namespace {

std::string Bounded(const char* text, size_t size) {
  return std::string(text, ::strnlen(text, size));
}

// `current_layout` is false for nvmlDeviceGetPciInfo(_v2) and the
// unversioned NvLink call: they fill NVML's older struct, which has the
// legacy bus ID first and reserved words where busId now is, so the
// 8-digit-domain form is rebuilt from the numbers (NVML's own format).
PciInfo ToPciInfo(const nvmlPciInfo_t& raw, bool current_layout) {
  PciInfo pci;
  pci.domain = raw.domain;
  pci.bus = raw.bus;
  pci.device = raw.device;
  pci.pci_device_id = raw.pciDeviceId;
  pci.pci_subsystem_id = raw.pciSubSystemId;
  pci.bus_id_legacy = Bounded(raw.busIdLegacy, sizeof(raw.busIdLegacy));
  if (current_layout) pci.bus_id = Bounded(raw.busId, sizeof(raw.busId));
  if (pci.bus_id.empty()) {
    pci.bus_id =
        absl::StrFormat("%08X:%02X:%02X.0", raw.domain, raw.bus, raw.device);
  }
  if (pci.bus_id_legacy.empty()) {
    pci.bus_id_legacy =
        absl::StrFormat("%04X:%02X:%02X.0", raw.domain, raw.bus, raw.device);
  }
  return pci;
}

// Room for every CPU the kernel may bring online, and at least 4096 so a
// driver that reports more than sysconf knows about is not cut short. The
// possible CPUs are fixed at boot, so sysconf (a read of
// /sys/devices/system/cpu/possible) is asked once, not once per GPU.
size_t CpuMaskWords() {
  static const size_t words = [] {
    constexpr long kMinCpus = 4096;
    constexpr long kBitsPerWord = sizeof(unsigned long) * CHAR_BIT;
    const long cpus = std::max(kMinCpus, ::sysconf(_SC_NPROCESSORS_CONF));
    return static_cast<size_t>((cpus + kBitsPerWord - 1) / kBitsPerWord);
  }();
  return words;
}

// NVML's 16 raw bytes in the usual 8-4-4-4-12 spelling; "" for all zeros (a
// GPU that has not joined a fabric).
std::string FabricUuid(const unsigned char (&raw)[NVML_GPU_FABRIC_UUID_LEN]) {
  if (std::all_of(std::begin(raw), std::end(raw),
                  [](unsigned char b) { return b == 0; })) {
    return "";
  }
  std::string out;
  for (size_t i = 0; i < NVML_GPU_FABRIC_UUID_LEN; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    absl::StrAppendFormat(&out, "%02x", raw[i]);
  }
  return out;
}

template <typename Raw>
GpuFabricInfo ToFabricInfo(const Raw& raw, unsigned version) {
  GpuFabricInfo info;
  info.cluster_uuid = FabricUuid(raw.clusterUuid);
  info.clique_id = raw.cliqueId;
  info.state = raw.state;
  info.status = raw.status;
  info.version = version;
  return info;
}

}  // namespace

// --------------------------------------------------------------- identity

absl::StatusOr<std::string> DynamicLibrary::DeviceGetUuid(Device device) {
  return GetString(fn_.nvmlDeviceGetUUID, device,
                   NVML_DEVICE_UUID_V2_BUFFER_SIZE, device);
}

absl::StatusOr<std::string> DynamicLibrary::DeviceGetName(Device device) {
  return GetString(fn_.nvmlDeviceGetName, device,
                   NVML_DEVICE_NAME_V2_BUFFER_SIZE, device);
}

absl::StatusOr<std::string> DynamicLibrary::DeviceGetSerial(Device device) {
  return GetString(fn_.nvmlDeviceGetSerial, device,
                   NVML_DEVICE_SERIAL_BUFFER_SIZE, device);
}

absl::StatusOr<unsigned> DynamicLibrary::DeviceGetMinorNumber(Device device) {
  return GetUnsigned(fn_.nvmlDeviceGetMinorNumber, device);
}

absl::StatusOr<PciInfo> DynamicLibrary::DeviceGetPciInfo(Device device) {
  const auto& symbol = fn_.nvmlDeviceGetPciInfo_v3;
  nvmlPciInfo_t raw = {};
  absl::Status status = Call(symbol, device, device, &raw);
  if (!status.ok()) return status;
  return ToPciInfo(raw,
                   std::strcmp(symbol.name, "nvmlDeviceGetPciInfo_v3") == 0);
}

absl::StatusOr<MemoryInfo> DynamicLibrary::DeviceGetMemoryInfo(Device device) {
  const auto& v2 = fn_.nvmlDeviceGetMemoryInfo_v2;
  const auto& v1 = fn_.nvmlDeviceGetMemoryInfo;
  if (v2.fn != nullptr) {
    nvmlMemory_v2_t raw = {};
    raw.version = nvmlMemory_v2;
    const nvmlReturn_t ret = v2.fn(device, &raw);
    if (ret == NVML_SUCCESS) {
      return MemoryInfo{raw.total, raw.reserved, raw.free, raw.used};
    }
    // A driver exporting _v2 without knowing this struct version.
    if (ret != NVML_ERROR_ARGUMENT_VERSION_MISMATCH || v1.fn == nullptr) {
      return Error(ret, v2.name, Describe(device));
    }
  }
  nvmlMemory_t raw = {};
  absl::Status status = Call(v1, device, device, &raw);
  if (!status.ok()) return status;
  return MemoryInfo{raw.total, 0, raw.free, raw.used};
}

absl::StatusOr<ComputeCapability>
DynamicLibrary::DeviceGetCudaComputeCapability(Device device) {
  ComputeCapability cc;
  absl::Status status = Call(fn_.nvmlDeviceGetCudaComputeCapability, device,
                             device, &cc.major, &cc.minor);
  if (!status.ok()) return status;
  return cc;
}

absl::StatusOr<nvmlBrandType_t> DynamicLibrary::DeviceGetBrand(Device device) {
  nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
  absl::Status status = Call(fn_.nvmlDeviceGetBrand, device, device, &brand);
  if (!status.ok()) return status;
  return brand;
}

absl::StatusOr<nvmlDeviceArchitecture_t> DynamicLibrary::DeviceGetArchitecture(
    Device device) {
  nvmlDeviceArchitecture_t arch = NVML_DEVICE_ARCH_UNKNOWN;
  absl::Status status =
      Call(fn_.nvmlDeviceGetArchitecture, device, device, &arch);
  if (!status.ok()) return status;
  return arch;
}

absl::StatusOr<unsigned> DynamicLibrary::DeviceGetNumaNodeId(Device device) {
  return GetUnsigned(fn_.nvmlDeviceGetNumaNodeId, device);
}

absl::StatusOr<std::vector<unsigned>> DynamicLibrary::DeviceGetCpuAffinity(
    Device device) {
  std::vector<unsigned long> mask(CpuMaskWords(), 0);
  absl::Status status = Call(fn_.nvmlDeviceGetCpuAffinity, device, device,
                             static_cast<unsigned>(mask.size()), mask.data());
  if (!status.ok()) return status;
  constexpr unsigned kBitsPerWord = sizeof(unsigned long) * CHAR_BIT;
  std::vector<unsigned> cpus;
  // The mask has room for at least 4096 CPUs, mostly zero words: visit only
  // the set bits (this loop was a tenth of discovery on 16 GPUs).
  for (size_t word = 0; word < mask.size(); ++word) {
    for (unsigned long bits = mask[word]; bits != 0; bits &= bits - 1) {
      cpus.push_back(
          static_cast<unsigned>(word * kBitsPerWord + std::countr_zero(bits)));
    }
  }
  return cpus;
}

absl::StatusOr<GpuFabricInfo> DynamicLibrary::DeviceGetGpuFabricInfo(
    Device device) {
  const auto& versioned = fn_.nvmlDeviceGetGpuFabricInfoV;
  const auto& v1 = fn_.nvmlDeviceGetGpuFabricInfo;
  if (versioned.fn != nullptr) {
    nvmlGpuFabricInfo_v3_t v3 = {};
    v3.version = nvmlGpuFabricInfo_v3;
    nvmlReturn_t ret = versioned.fn(device, &v3);
    if (ret == NVML_SUCCESS) {
      GpuFabricInfo info = ToFabricInfo(v3, 3);
      info.health_mask = v3.healthMask;
      info.health_summary = v3.healthSummary;
      return info;
    }
    // Drivers before 580 know v2 only. The v2 struct is a prefix of v3, so
    // it is passed as such; the layouts are pinned in nvml_api.h.
    if (ret == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
      nvmlGpuFabricInfo_v3_t v2 = {};
      v2.version = nvmlGpuFabricInfo_v2;
      ret = versioned.fn(device, &v2);
      if (ret == NVML_SUCCESS) {
        GpuFabricInfo info = ToFabricInfo(v2, 2);
        info.health_mask = v2.healthMask;
        return info;
      }
    }
    if (ret != NVML_ERROR_ARGUMENT_VERSION_MISMATCH || v1.fn == nullptr) {
      return Error(ret, versioned.name, Describe(device));
    }
  }
  nvmlGpuFabricInfo_t raw = {};
  absl::Status status = Call(v1, device, device, &raw);
  if (!status.ok()) return status;
  return ToFabricInfo(raw, 1);
}

// --------------------------------------------------------------- topology

absl::StatusOr<nvmlGpuTopologyLevel_t>
DynamicLibrary::DeviceGetTopologyCommonAncestor(Device a, Device b) {
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
  absl::Status status = Call(fn_.nvmlDeviceGetTopologyCommonAncestor,
                             DevicePair(a, b), a, b, &level);
  if (!status.ok()) return status;
  return level;
}

absl::StatusOr<bool> DynamicLibrary::DeviceGetNvLinkState(Device device,
                                                          unsigned link) {
  nvmlEnableState_t state = NVML_FEATURE_DISABLED;
  absl::Status status =
      Call(fn_.nvmlDeviceGetNvLinkState, Item<Device>{device, "link", link},
           device, link, &state);
  if (!status.ok()) return status;
  return state == NVML_FEATURE_ENABLED;
}

absl::StatusOr<PciInfo> DynamicLibrary::DeviceGetNvLinkRemotePciInfo(
    Device device, unsigned link) {
  const auto& symbol = fn_.nvmlDeviceGetNvLinkRemotePciInfo_v2;
  nvmlPciInfo_t raw = {};
  absl::Status status =
      Call(symbol, Item<Device>{device, "link", link}, device, link, &raw);
  if (!status.ok()) return status;
  return ToPciInfo(
      raw,
      std::strcmp(symbol.name, "nvmlDeviceGetNvLinkRemotePciInfo_v2") == 0);
}

absl::StatusOr<nvmlIntNvLinkDeviceType_t>
DynamicLibrary::DeviceGetNvLinkRemoteDeviceType(Device device, unsigned link) {
  nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  absl::Status status =
      Call(fn_.nvmlDeviceGetNvLinkRemoteDeviceType,
           Item<Device>{device, "link", link}, device, link, &type);
  if (!status.ok()) return status;
  return type;
}

absl::StatusOr<nvmlGpuP2PStatus_t> DynamicLibrary::DeviceGetP2PStatus(
    Device a, Device b, nvmlGpuP2PCapsIndex_t index) {
  nvmlGpuP2PStatus_t p2p = NVML_P2P_STATUS_UNKNOWN;
  absl::Status status =
      Call(fn_.nvmlDeviceGetP2PStatus, DevicePair(a, b), a, b, index, &p2p);
  if (!status.ok()) return status;
  return p2p;
}

}  // namespace gpulet::nvml
