// Small conversions between the simulator's machine model (plain strings and
// numbers, machine.h) and NVML's C representations: PCI bus IDs, string
// out-parameters, CPU masks, error strings.
//
// Pure functions with no shared state; thread-safe. They never write past
// the sizes NVML documents for each out-parameter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::sim {

struct PciAddress {
  uint32_t domain = 0;
  uint32_t bus = 0;
  uint32_t device = 0;
  uint32_t function = 0;
  bool operator==(const PciAddress&) const = default;
};

// Accepts NVML's input forms, hexadecimal, case-insensitive:
// "domain:bus:device.function" (any domain width, so both "0000:07:00.0" and
// "00000000:07:00.0"), "domain:bus:device" and "bus:device.function".
// nullopt for anything else or out-of-range fields.
std::optional<PciAddress> ParsePciBusId(absl::string_view text);

// "00000000:07:00.0" (NVML_DEVICE_PCI_BUS_ID_FMT) and "0000:07:00.0" (legacy).
std::string FormatPciBusId(const PciAddress& address);
std::string FormatPciBusIdLegacy(const PciAddress& address);

// Fills the current nvmlPciInfo_t (the _v2/_v3 layout).
void FillPciInfo(const PciAddress& address, uint32_t pci_device_id,
                 uint32_t pci_subsystem_id, nvmlPciInfo_t* out);

// Fills the first kLegacyPciInfoBytes of `out` with the layout NVML used
// before busIdLegacy existed (busId[16], domain, bus, device, pciDeviceId,
// pciSubSystemId, 4 reserved words), which is what callers of the unversioned
// symbols allocate.
inline constexpr size_t kLegacyPciInfoBytes = 52;
void FillLegacyPciInfo(const PciAddress& address, uint32_t pci_device_id,
                       uint32_t pci_subsystem_id, void* out);

// NVML's string out-parameter contract: INVALID_ARGUMENT for a null buffer,
// INSUFFICIENT_SIZE when `length` cannot hold the text and its terminator.
nvmlReturn_t CopyString(absl::string_view text, char* buffer,
                        unsigned int length);

// Sets bit (cpu % 64) of word (cpu / 64) for every CPU that fits into
// `words` unsigned longs; the rest of the mask is cleared.
void FillCpuSet(const std::vector<unsigned>& cpus, unsigned int words,
                unsigned long* out);

// The text nvmlErrorString returns for `code` ("Unknown Error" for codes it
// does not know). Static storage. Codes are plain integers here: a client
// may pass any value, and an out-of-range value must not be held in an
// nvmlReturn_t.
const char* NvmlErrorText(unsigned int code);

// "NVML_ERROR_GPU_IS_LOST" for `code`, nullptr if it is no nvmlReturn_t value.
const char* NvmlReturnName(unsigned int code);

}  // namespace gpulet::sim
