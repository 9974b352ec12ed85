#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio {

namespace {
constexpr uint16_t kNvidiaVendor = 0x10de;
}  // namespace

bool PciFunction::IsBridge() const {
  // Bridges (0x0604 PCI, 0x0600 host) are not assigned with the group: the
  // kernel's vfio viability rule lets a bridge keep pcieport or no driver.
  const uint32_t base_sub = class_code >> 8;
  return base_sub == 0x0604 || base_sub == 0x0600;
}

bool PciFunction::IsNvidiaGpu() const {
  return vendor == kNvidiaVendor && (class_code >> 16) == 0x03;
}

std::filesystem::path GroupDevicePath(const Roots& roots, int group) {
  return roots.dev / "vfio" / std::to_string(group);
}

}  // namespace gpulet::vfio
