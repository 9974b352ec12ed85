#include "src/gpu/device/pci_address.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace gpulet::device {
namespace {

std::optional<uint32_t> ParseHex(absl::string_view text, size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) {
      return std::nullopt;
    }
  }
  uint32_t value = 0;
  if (!absl::SimpleHexAtoi(text, &value)) return std::nullopt;
  return value;
}

}  // namespace

std::optional<PciAddress> ParsePciAddress(const std::string& text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() == 2) parts.insert(parts.begin(), "0");
  if (parts.size() != 3) return std::nullopt;
  std::vector<absl::string_view> dev_fn = absl::StrSplit(parts[2], '.');
  if (dev_fn.size() != 2) return std::nullopt;
  auto domain = ParseHex(parts[0], 8);
  auto bus = ParseHex(parts[1], 2);
  auto device = ParseHex(dev_fn[0], 2);
  auto function = ParseHex(dev_fn[1], 1);
  if (!domain || !bus || !device || !function) return std::nullopt;
  if (*device > 0x1f || *function > 7) return std::nullopt;
  return PciAddress{*domain, *bus, *device, *function};
}

std::string NvmlBusId(const PciAddress& a) {
  return absl::StrFormat("%08X:%02X:%02X.%X", a.domain, a.bus, a.device,
                         a.function);
}

std::string SysfsBusId(const PciAddress& a) {
  return absl::StrFormat("%04x:%02x:%02x.%x", a.domain, a.bus, a.device,
                         a.function);
}

std::string CanonicalBusId(const std::string& text) {
  auto address = ParsePciAddress(text);
  return address ? NvmlBusId(*address) : text;
}

}  // namespace gpulet::device
