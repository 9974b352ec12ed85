// PCI bus ID spellings. NVML reports "00000000:18:00.0" (8-digit domain,
// upper-case hex), sysfs names devices "0000:18:00.0" (4-digit domain,
// lower-case), and NVLink remote ends may use either. These helpers parse any
// of them and print one canonical form so IDs compare reliably.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpulet::device {

struct PciAddress {
  uint32_t domain = 0;
  uint32_t bus = 0;
  uint32_t device = 0;
  uint32_t function = 0;

  bool operator==(const PciAddress&) const = default;
};

// Parses "[domain:]bus:device.function" in hex, any case, any domain width.
// nullopt for anything else.
std::optional<PciAddress> ParsePciAddress(const std::string& text);

// "00000000:18:00.0": NVML's form, used as the canonical key.
std::string NvmlBusId(const PciAddress& address);
// "0000:18:00.0": the name under /sys/bus/pci/devices.
std::string SysfsBusId(const PciAddress& address);

// NvmlBusId(ParsePciAddress(text)) when parseable, else `text` unchanged.
std::string CanonicalBusId(const std::string& text);

}  // namespace gpulet::device
