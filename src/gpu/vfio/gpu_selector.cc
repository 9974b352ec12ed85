#include "src/gpu/vfio/gpu_selector.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "src/gpu/device/pci_address.h"

namespace gpulet::vfio {
namespace {

absl::Status NotFound(const Inventory& inventory, const std::string& argument,
                      const std::string& why) {
  std::vector<std::string> listed;
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    listed.push_back(absl::StrCat(i, " ", inventory.gpus[i].function.address));
  }
  return absl::NotFoundError(
      absl::StrCat("GPU \"", argument, "\": ", why, " (NVIDIA GPUs: ",
                   listed.empty() ? "none" : absl::StrJoin(listed, ", "), ")"));
}

const Gpu* ByAddress(const Inventory& inventory, const std::string& address) {
  for (const Gpu& gpu : inventory.gpus) {
    if (gpu.function.address == address) return &gpu;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<const Gpu*> SelectGpu(
    const Inventory& inventory, const std::string& argument,
    const std::map<std::string, std::string>& uuid_addresses) {
  unsigned index = 0;
  if (absl::SimpleAtoi(argument, &index) && absl::ascii_isdigit(argument[0])) {
    if (index < inventory.gpus.size()) return &inventory.gpus[index];
    return NotFound(inventory, argument, "no GPU with that index");
  }
  if (absl::StartsWithIgnoreCase(argument, "GPU-")) {
    auto it = uuid_addresses.find(absl::AsciiStrToUpper(argument));
    if (it == uuid_addresses.end()) {
      return NotFound(inventory, argument,
                      "NVML knows no GPU with that UUID (a GPU on vfio-pci "
                      "has left NVML: name it by index or PCI address)");
    }
    if (const Gpu* gpu = ByAddress(inventory, it->second)) return gpu;
    return NotFound(inventory, argument,
                    absl::StrCat("NVML places it at ", it->second,
                                 ", which sysfs does not list"));
  }
  if (std::optional<device::PciAddress> address =
          device::ParsePciAddress(argument)) {
    if (const Gpu* gpu = ByAddress(inventory, device::SysfsBusId(*address))) {
      return gpu;
    }
    return NotFound(inventory, argument, "no NVIDIA GPU at that PCI address");
  }
  return NotFound(inventory, argument,
                  "not an index, a PCI address or a GPU-<uuid>");
}

bool Selects(const config::PassthroughSelector& selector, const Gpu& gpu) {
  using Kind = config::PassthroughSelector::Kind;
  switch (selector.kind) {
    case Kind::kVfioBound:
      return gpu.function.driver == "vfio-pci";
    case Kind::kPciAddress:
      return gpu.function.address == selector.pci_address;
    case Kind::kDeviceId:
      return gpu.function.device == selector.device_id;
  }
  return false;
}

std::string SelectsNothing(size_t index,
                           const config::PassthroughSelector& selector) {
  using Kind = config::PassthroughSelector::Kind;
  std::string what;
  switch (selector.kind) {
    case Kind::kVfioBound:
      what = "vfio-pci (no NVIDIA GPU is bound to vfio-pci)";
      break;
    case Kind::kPciAddress:
      what = absl::StrCat(selector.pci_address,
                          " (no NVIDIA GPU at this address)");
      break;
    case Kind::kDeviceId:
      what = absl::StrFormat("10de:%04x (no GPU with this device ID)",
                             selector.device_id);
      break;
  }
  return absl::StrCat("passthrough.devices[", index,
                      "]: selects nothing: ", what);
}

std::vector<const Gpu*> SelectedGpus(const Inventory& inventory,
                                     const config::Passthrough& config,
                                     std::vector<std::string>* unmatched) {
  std::vector<bool> matched(config.devices.size(), false);
  std::vector<const Gpu*> out;
  for (const Gpu& gpu : inventory.gpus) {
    bool selected = false;
    for (size_t i = 0; i < config.devices.size(); ++i) {
      if (Selects(config.devices[i], gpu)) matched[i] = selected = true;
    }
    if (selected && gpu.physfn.empty()) out.push_back(&gpu);
  }
  for (size_t i = 0; i < config.devices.size(); ++i) {
    if (!matched[i]) unmatched->push_back(SelectsNothing(i, config.devices[i]));
  }
  return out;
}

}  // namespace gpulet::vfio
