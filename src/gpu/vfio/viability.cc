#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio {
namespace {

// What an operator recognises in lspci's terms.
std::string Kind(uint32_t class_code) {
  switch (class_code >> 8) {
    case 0x0300:
    case 0x0302:
      return "GPU";
    case 0x0403:
      return "audio";
    case 0x0c03:
      return "USB";
    case 0x0c80:
      return "UCSI";
    case 0x0108:
      return "NVMe";
    case 0x0604:
      return "bridge";
    default:
      break;
  }
  if ((class_code >> 16) == 0x02) return "network";
  return absl::StrFormat("class 0x%06x", class_code);
}

}  // namespace

Viability CheckViability(const Gpu& gpu) {
  const PciFunction& fn = gpu.function;
  if (fn.iommu_group < 0) {
    return {false,
            absl::StrCat(fn.address,
                         ": no IOMMU group (is the IOMMU on? intel_iommu=on "
                         "or amd_iommu=on on the kernel command line)")};
  }
  for (const PciFunction& member : gpu.group) {
    if (member.driver == "vfio-pci" || member.IsBridge()) continue;
    return {false, absl::StrFormat(
                       "IOMMU group %d: %s (%s, %04x:%04x) is %s, not "
                       "vfio-pci",
                       fn.iommu_group, member.address, Kind(member.class_code),
                       member.vendor, member.device,
                       member.driver.empty() ? std::string("bound to no driver")
                                             : "bound to " + member.driver)};
  }
  return {true, ""};
}

}  // namespace gpulet::vfio
