#include "sim/nvml_values.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace gpulet::sim {
namespace {

bool ParseHex(absl::string_view text, uint32_t max, uint32_t* out) {
  if (text.empty() || text.size() > 8) return false;
  for (char c : text) {
    if (!absl::ascii_isxdigit(c)) return false;
  }
  uint32_t value = 0;
  if (!absl::SimpleHexAtoi(text, &value) || value > max) return false;
  *out = value;
  return true;
}

struct ErrorEntry {
  nvmlReturn_t code;
  const char* name;
  const char* text;
};

// Texts follow what NVIDIA's library prints where that is widely known
// ("Unknown Error", "GPU is lost", ...); the rest paraphrase nvml.h.
constexpr ErrorEntry kErrors[] = {
    {NVML_SUCCESS, "NVML_SUCCESS", "Success"},
    {NVML_ERROR_UNINITIALIZED, "NVML_ERROR_UNINITIALIZED", "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "NVML_ERROR_INVALID_ARGUMENT",
     "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "NVML_ERROR_NOT_SUPPORTED", "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "NVML_ERROR_NO_PERMISSION",
     "Insufficient Permissions"},
    {NVML_ERROR_ALREADY_INITIALIZED, "NVML_ERROR_ALREADY_INITIALIZED",
     "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "NVML_ERROR_NOT_FOUND", "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "NVML_ERROR_INSUFFICIENT_SIZE",
     "Insufficient Size"},
    {NVML_ERROR_INSUFFICIENT_POWER, "NVML_ERROR_INSUFFICIENT_POWER",
     "Insufficient External Power"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "NVML_ERROR_DRIVER_NOT_LOADED",
     "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "NVML_ERROR_TIMEOUT", "Timeout"},
    {NVML_ERROR_IRQ_ISSUE, "NVML_ERROR_IRQ_ISSUE", "Interrupt Request Issue"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, "NVML_ERROR_LIBRARY_NOT_FOUND",
     "NVML Shared Library Not Found"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "NVML_ERROR_FUNCTION_NOT_FOUND",
     "Function Not Found"},
    {NVML_ERROR_CORRUPTED_INFOROM, "NVML_ERROR_CORRUPTED_INFOROM",
     "Corrupted infoROM"},
    {NVML_ERROR_GPU_IS_LOST, "NVML_ERROR_GPU_IS_LOST", "GPU is lost"},
    {NVML_ERROR_RESET_REQUIRED, "NVML_ERROR_RESET_REQUIRED",
     "GPU requires restart"},
    {NVML_ERROR_OPERATING_SYSTEM, "NVML_ERROR_OPERATING_SYSTEM",
     "The operating system has blocked the request."},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
     "Driver/library version mismatch"},
    {NVML_ERROR_IN_USE, "NVML_ERROR_IN_USE", "In use by another client"},
    {NVML_ERROR_MEMORY, "NVML_ERROR_MEMORY", "Insufficient Memory"},
    {NVML_ERROR_NO_DATA, "NVML_ERROR_NO_DATA", "No data"},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
     "The requested vgpu operation is not available on target device, "
     "because ECC is enabled"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "NVML_ERROR_INSUFFICIENT_RESOURCES",
     "Ran out of critical resources, other than memory"},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, "NVML_ERROR_FREQ_NOT_SUPPORTED",
     "The requested frequency is not supported"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
     "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
     "The provided version is invalid/unsupported"},
    {NVML_ERROR_DEPRECATED, "NVML_ERROR_DEPRECATED",
     "The requested functionality has been deprecated"},
    {NVML_ERROR_NOT_READY, "NVML_ERROR_NOT_READY",
     "The system is not ready for the request"},
    {NVML_ERROR_GPU_NOT_FOUND, "NVML_ERROR_GPU_NOT_FOUND",
     "No supported GPUs were found"},
    {NVML_ERROR_INVALID_STATE, "NVML_ERROR_INVALID_STATE",
     "Resource not in correct state to perform requested operation"},
    {NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED",
     "Reset not supported for given device/parameters"},
    {NVML_ERROR_UNKNOWN, "NVML_ERROR_UNKNOWN", "Unknown Error"},
};

const ErrorEntry* FindError(unsigned int code) {
  for (const ErrorEntry& entry : kErrors) {
    if (static_cast<unsigned int>(entry.code) == code) return &entry;
  }
  return nullptr;
}

}  // namespace

std::optional<PciAddress> ParsePciBusId(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  PciAddress address;
  absl::string_view device_function;
  if (parts.size() == 3) {
    if (!ParseHex(parts[0], 0xFFFFFFFF, &address.domain)) return std::nullopt;
    if (!ParseHex(parts[1], 0xFF, &address.bus)) return std::nullopt;
    device_function = parts[2];
  } else if (parts.size() == 2) {
    if (!ParseHex(parts[0], 0xFF, &address.bus)) return std::nullopt;
    device_function = parts[1];
    // "bus:device" alone is ambiguous with "domain:bus": NVML wants .function.
    if (device_function.find('.') == absl::string_view::npos) {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  std::vector<absl::string_view> df = absl::StrSplit(device_function, '.');
  if (df.size() > 2) return std::nullopt;
  if (!ParseHex(df[0], 0x1F, &address.device)) return std::nullopt;
  if (df.size() == 2 && !ParseHex(df[1], 0x7, &address.function)) {
    return std::nullopt;
  }
  return address;
}

std::string FormatPciBusId(const PciAddress& a) {
  return absl::StrFormat("%08X:%02X:%02X.%X", a.domain, a.bus, a.device,
                         a.function);
}

std::string FormatPciBusIdLegacy(const PciAddress& a) {
  return absl::StrFormat("%04X:%02X:%02X.%X", a.domain, a.bus, a.device,
                         a.function);
}

void FillPciInfo(const PciAddress& address, uint32_t pci_device_id,
                 uint32_t pci_subsystem_id, nvmlPciInfo_t* out) {
  std::memset(out, 0, sizeof(*out));
  std::string legacy = FormatPciBusIdLegacy(address);
  std::string full = FormatPciBusId(address);
  std::strncpy(out->busIdLegacy, legacy.c_str(), sizeof(out->busIdLegacy) - 1);
  std::strncpy(out->busId, full.c_str(), sizeof(out->busId) - 1);
  out->domain = address.domain;
  out->bus = address.bus;
  out->device = address.device;
  out->pciDeviceId = pci_device_id;
  out->pciSubSystemId = pci_subsystem_id;
}

void FillLegacyPciInfo(const PciAddress& address, uint32_t pci_device_id,
                       uint32_t pci_subsystem_id, void* out) {
  struct LegacyPciInfo {
    char busId[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    unsigned int reserved[4];
  } legacy;
  static_assert(sizeof(LegacyPciInfo) == kLegacyPciInfoBytes);
  std::memset(&legacy, 0, sizeof(legacy));
  std::string id = FormatPciBusIdLegacy(address);
  std::strncpy(legacy.busId, id.c_str(), sizeof(legacy.busId) - 1);
  legacy.domain = address.domain;
  legacy.bus = address.bus;
  legacy.device = address.device;
  legacy.pciDeviceId = pci_device_id;
  legacy.pciSubSystemId = pci_subsystem_id;
  std::memcpy(out, &legacy, sizeof(legacy));
}

nvmlReturn_t CopyString(absl::string_view text, char* buffer,
                        unsigned int length) {
  if (buffer == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < text.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  return NVML_SUCCESS;
}

void FillCpuSet(const std::vector<unsigned>& cpus, unsigned int words,
                unsigned long* out) {
  constexpr unsigned kBits = sizeof(unsigned long) * 8;
  for (unsigned int i = 0; i < words; ++i) out[i] = 0;
  for (unsigned cpu : cpus) {
    if (cpu / kBits < words) out[cpu / kBits] |= 1UL << (cpu % kBits);
  }
}

const char* NvmlErrorText(unsigned int code) {
  const ErrorEntry* entry = FindError(code);
  return entry ? entry->text : "Unknown Error";
}

const char* NvmlReturnName(unsigned int code) {
  const ErrorEntry* entry = FindError(code);
  return entry ? entry->name : nullptr;
}

}  // namespace gpulet::sim
