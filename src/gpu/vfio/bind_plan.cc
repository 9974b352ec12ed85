#include "src/gpu/vfio/bind_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpulet::vfio {
namespace {

constexpr char kVfioPci[] = "vfio-pci";
constexpr uint16_t kNvidia = 0x10de;

std::filesystem::path PciBus(const Roots& roots) {
  return roots.sys / "bus" / "pci";
}

// Companions (audio, USB, UCSI, other GPUs of a shared group) before the
// GPU itself, each set in address order.
std::vector<const PciFunction*> BindOrder(const Gpu& gpu) {
  std::vector<const PciFunction*> order;
  for (const PciFunction& fn : gpu.group) {
    if (fn.address != gpu.function.address) order.push_back(&fn);
  }
  order.push_back(&gpu.function);
  return order;
}

std::string Describe(const PciFunction& fn) {
  return absl::StrFormat("%s (%04x:%04x, class 0x%06x)", fn.address, fn.vendor,
                         fn.device, fn.class_code);
}

}  // namespace

absl::StatusOr<BindPlan> PlanBind(const Roots& roots, const Gpu& gpu) {
  BindPlan plan;
  plan.gpu = gpu.function.address;
  plan.group = gpu.function.iommu_group;
  if (plan.group < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "GPU ", plan.gpu, ": ",
        (roots.sys / "bus/pci/devices" / plan.gpu / "iommu_group").string(),
        " is missing: no IOMMU group, so no VFIO (is the IOMMU on? "
        "intel_iommu=on or amd_iommu=on)"));
  }
  for (const PciFunction& fn : gpu.group) {
    if (fn.vendor == kNvidia || fn.IsBridge() || fn.driver.empty() ||
        fn.driver == kVfioPci) {
      continue;
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "GPU ", plan.gpu, ": refusing to bind IOMMU group ", plan.group,
        ": it also holds ", Describe(fn), ", which the host uses through ",
        fn.driver,
        "; a VM given the GPU would take it too. Move the GPU to "
        "a slot with its own group, or unbind that device first if the host "
        "can do without it"));
  }
  for (const PciFunction* fn : BindOrder(gpu)) {
    if (fn->IsBridge() || fn->driver == kVfioPci) continue;
    if (fn->address != plan.gpu && fn->IsNvidiaGpu()) {
      plan.notes.push_back(absl::StrCat("also binds GPU ", fn->address,
                                        ": it shares IOMMU group ",
                                        plan.group));
    }
    plan.previous[fn->address] = fn->driver;
    const std::filesystem::path dir = PciBus(roots) / "devices" / fn->address;
    plan.writes.push_back(
        {dir / "driver_override", kVfioPci, fn->address, false, "", false});
    if (!fn->driver.empty()) {
      plan.writes.push_back({PciBus(roots) / "drivers" / fn->driver / "unbind",
                             fn->address, fn->address, true, "", false});
    }
    plan.writes.push_back({PciBus(roots) / "drivers_probe", fn->address,
                           fn->address, true, kVfioPci});
  }
  return plan;
}

BindPlan PlanUnbind(const Roots& roots, const Gpu& gpu,
                    const std::map<std::string, std::string>& remembered) {
  BindPlan plan;
  plan.gpu = gpu.function.address;
  plan.group = gpu.function.iommu_group;
  std::vector<const PciFunction*> order = BindOrder(gpu);
  std::reverse(order.begin(), order.end());
  for (const PciFunction* fn : order) {
    if (fn->driver != kVfioPci) continue;
    if (fn->address != plan.gpu && fn->IsNvidiaGpu()) {
      plan.notes.push_back(absl::StrCat("also unbinds GPU ", fn->address,
                                        ": it shares IOMMU group ",
                                        plan.group));
    }
    plan.previous[fn->address] = kVfioPci;
    const std::filesystem::path dir = PciBus(roots) / "devices" / fn->address;
    plan.writes.push_back(
        {dir / "driver_override", "", fn->address, false, "", false});
    plan.writes.push_back({PciBus(roots) / "drivers" / kVfioPci / "unbind",
                           fn->address, fn->address, true, "", false});
    auto it = remembered.find(fn->address);
    if (it != remembered.end() && !it->second.empty() &&
        it->second != kVfioPci) {
      plan.writes.push_back({PciBus(roots) / "drivers" / it->second / "bind",
                             fn->address, fn->address, true, it->second,
                             false});
    } else if (it == remembered.end()) {
      plan.writes.push_back({PciBus(roots) / "drivers_probe", fn->address,
                             fn->address, true, "", true});
    }
    // Remembered as unbound: leave it unbound.
  }
  return plan;
}

}  // namespace gpulet::vfio
