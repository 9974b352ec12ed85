// RenderSys: the simulated node's /sys (PCI functions, their drivers, IOMMU
// groups, mdev types and instances, DMI product name) and its VFIO device
// nodes, from the machine file. Bindings go through sysfs_tree.h, the same
// code FakeKernel runs when a test writes to the tree.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/node_render.h"
#include "sim/render_fs.h"
#include "sim/sysfs_tree.h"
#include "src/base/common/status_macros.h"

namespace gpulet::sim {
namespace {

// NVIDIA's "3D controller" PCI class, which data-center GPUs report.
constexpr uint32_t kGpuClass = 0x030200;

// One function to lay out, GPU or companion.
struct Function {
  std::string bdf;
  uint16_t vendor = 0x10de;
  uint16_t device = 0;
  uint32_t subsystem = 0;
  uint32_t class_code = kGpuClass;
  int numa_node = -1;
  std::string driver;
  std::string group;
};

std::vector<Function> Functions(const Machine& machine) {
  std::vector<Function> out;
  auto add_gpu = [&](const Gpu& gpu) {
    const std::string group = std::to_string(gpu.iommu_group);
    out.push_back({SysfsBusId(gpu.bus_id), 0x10de,
                   static_cast<uint16_t>(gpu.pci_device_id >> 16),
                   gpu.pci_subsystem_id, kGpuClass, gpu.numa_node,
                   gpu.bound_driver, group});
    for (const PciFunction& fn : gpu.functions) {
      out.push_back({fn.address, fn.vendor, fn.device, 0, fn.class_code,
                     gpu.numa_node, fn.driver, group});
    }
  };
  for (const Gpu& gpu : machine.gpus) add_gpu(gpu);
  for (const Gpu& gpu : machine.host_gpus) add_gpu(gpu);
  return out;
}

absl::Status WriteAttributes(const std::string& dir, const Function& fn) {
  const auto hex = [](uint32_t v) { return absl::StrFormat("0x%04x\n", v); };
  GPULET_RETURN_IF_ERROR(render::EnsureDir(dir));
  GPULET_RETURN_IF_ERROR(render::WriteFile(dir + "/vendor", hex(fn.vendor)));
  GPULET_RETURN_IF_ERROR(render::WriteFile(dir + "/device", hex(fn.device)));
  GPULET_RETURN_IF_ERROR(
      render::WriteFile(dir + "/subsystem_vendor", hex(fn.subsystem & 0xffff)));
  GPULET_RETURN_IF_ERROR(
      render::WriteFile(dir + "/subsystem_device", hex(fn.subsystem >> 16)));
  GPULET_RETURN_IF_ERROR(render::WriteFile(
      dir + "/class", absl::StrFormat("0x%06x\n", fn.class_code)));
  GPULET_RETURN_IF_ERROR(
      render::WriteFile(dir + "/numa_node", absl::StrCat(fn.numa_node, "\n")));
  return render::WriteFile(dir + "/driver_override", "(null)\n");
}

// A driver's directory with the files the bind command writes.
absl::Status DriverDir(const std::string& sys, const std::string& driver) {
  const std::string dir = sys + "/bus/pci/drivers/" + driver;
  GPULET_RETURN_IF_ERROR(render::EnsureDir(dir));
  for (const char* name : {"bind", "unbind", "new_id", "remove_id"}) {
    GPULET_RETURN_IF_ERROR(
        render::WriteFile(absl::StrCat(dir, "/", name), "", 0600));
  }
  return absl::OkStatus();
}

// mdev_supported_types under the GPU and its instances; each instance is
// alone in a group numbered after every PCI group.
absl::Status RenderMdevs(const SysTree& tree, const Gpu& gpu, int* next_group,
                         std::set<std::string>* groups,
                         std::set<std::string>* uuids) {
  const std::string bdf = SysfsBusId(gpu.bus_id);
  const std::string dir = FunctionDir(tree, bdf);
  for (const MdevType& type : gpu.mdev_types) {
    const std::string t = dir + "/mdev_supported_types/" + type.id;
    GPULET_RETURN_IF_ERROR(render::EnsureDir(t + "/devices"));
    GPULET_RETURN_IF_ERROR(render::WriteFile(t + "/name", type.name + "\n"));
    GPULET_RETURN_IF_ERROR(render::WriteFile(
        t + "/available_instances", absl::StrCat(type.available, "\n")));
    GPULET_RETURN_IF_ERROR(render::WriteFile(t + "/device_api", "vfio-pci\n"));
  }
  for (const Mdev& mdev : gpu.mdevs) {
    const std::string group = std::to_string((*next_group)++);
    const std::string m = dir + "/" + mdev.uuid;
    GPULET_RETURN_IF_ERROR(render::EnsureDir(m));
    GPULET_RETURN_IF_ERROR(render::Symlink(
        "../mdev_supported_types/" + mdev.type, m + "/mdev_type"));
    GPULET_RETURN_IF_ERROR(render::Symlink(
        "../../../../kernel/iommu_groups/" + group, m + "/iommu_group"));
    const std::string rel = absl::StrCat("devices/pci", bdf.substr(0, 4),
                                         ":00/", bdf, "/", mdev.uuid);
    GPULET_RETURN_IF_ERROR(render::Symlink(
        "../../../" + rel, tree.sys + "/bus/mdev/devices/" + mdev.uuid));
    const std::string members =
        tree.sys + "/kernel/iommu_groups/" + group + "/devices";
    GPULET_RETURN_IF_ERROR(render::EnsureDir(members));
    GPULET_RETURN_IF_ERROR(
        render::Symlink("../../../../" + rel, members + "/" + mdev.uuid));
    GPULET_RETURN_IF_ERROR(render::CharDevice(
        tree.dev + "/vfio/" + group, kVfioGroupMajor,
        static_cast<unsigned>(std::stoi(group)), tree.dev_nodes));
    groups->insert(group);
    uuids->insert(mdev.uuid);
  }
  return absl::OkStatus();
}

absl::Status RenderVfioDev(const Machine& machine, const SysTree& tree) {
  GPULET_RETURN_IF_ERROR(render::EnsureDir(tree.dev + "/vfio/devices"));
  // Group nodes and cdevs are made again from the bindings below.
  GPULET_RETURN_IF_ERROR(render::RemoveStale(
      tree.dev + "/vfio",
      [](const std::string& n) { return n != "vfio" && n != "devices"; }));
  GPULET_RETURN_IF_ERROR(render::RemoveStale(
      tree.dev + "/vfio/devices", [](const std::string&) { return true; }));
  GPULET_RETURN_IF_ERROR(render::CharDevice(tree.dev + "/vfio/vfio", kMiscMajor,
                                            kVfioContainerMinor,
                                            tree.dev_nodes));
  if (machine.iommufd) {
    return render::CharDevice(tree.dev + "/iommu", kMiscMajor, kIommuMinor,
                              tree.dev_nodes);
  }
  return render::RemoveStale(tree.dev,
                             [](const std::string& n) { return n == "iommu"; });
}

absl::Status LinkFunction(const SysTree& tree, const Function& fn) {
  const std::string rel =
      absl::StrCat("devices/pci", fn.bdf.substr(0, 4), ":00/", fn.bdf);
  const std::string dir = tree.sys + "/" + rel;
  GPULET_RETURN_IF_ERROR(WriteAttributes(dir, fn));
  GPULET_RETURN_IF_ERROR(render::Symlink(
      "../../../kernel/iommu_groups/" + fn.group, dir + "/iommu_group"));
  GPULET_RETURN_IF_ERROR(render::Symlink(
      "../../../" + rel, tree.sys + "/bus/pci/devices/" + fn.bdf));
  const std::string members =
      absl::StrCat(tree.sys, "/kernel/iommu_groups/", fn.group, "/devices");
  GPULET_RETURN_IF_ERROR(render::EnsureDir(members));
  GPULET_RETURN_IF_ERROR(
      render::Symlink("../../../../" + rel, members + "/" + fn.bdf));
  // Bound again below from the machine file.
  return render::RemoveStale(dir, [](const std::string& n) {
    return n == "driver" || n == "vfio-dev";
  });
}

}  // namespace

absl::Status RenderSys(const Machine& machine, const std::string& root,
                       DevNodes how) {
  const SysTree tree{root + "/sys", root + "/dev", how};
  const std::string& sys = tree.sys;
  // What GPU feature discovery reads as the machine type; a machine without
  // one leaves no earlier machine's behind.
  const std::string dmi = sys + "/class/dmi/id";
  if (machine.product_name.empty()) {
    GPULET_RETURN_IF_ERROR(render::RemoveStale(
        dmi, [](const std::string& n) { return n == "product_name"; }));
  } else {
    GPULET_RETURN_IF_ERROR(render::EnsureDir(dmi));
    GPULET_RETURN_IF_ERROR(
        render::WriteFile(dmi + "/product_name", machine.product_name + "\n"));
  }
  GPULET_RETURN_IF_ERROR(render::EnsureDir(sys + "/bus/pci/devices"));
  GPULET_RETURN_IF_ERROR(render::EnsureDir(sys + "/bus/mdev/devices"));
  GPULET_RETURN_IF_ERROR(render::EnsureDir(sys + "/kernel/iommu_groups"));
  GPULET_RETURN_IF_ERROR(
      render::WriteFile(sys + "/bus/pci/drivers_probe", "", 0600));
  GPULET_RETURN_IF_ERROR(RenderVfioDev(machine, tree));
  const std::vector<Function> functions = Functions(machine);
  std::set<std::string> bdfs, groups, drivers = {"nvidia", "vfio-pci"}, uuids;
  for (const Function& fn : functions) {
    if (!fn.driver.empty()) drivers.insert(fn.driver);
  }
  GPULET_RETURN_IF_ERROR(render::RemoveStale(
      sys + "/bus/pci/drivers",
      [&](const std::string& n) { return !drivers.contains(n); }));
  for (const std::string& driver : drivers) {
    GPULET_RETURN_IF_ERROR(DriverDir(sys, driver));
    GPULET_RETURN_IF_ERROR(render::RemoveStale(
        sys + "/bus/pci/drivers/" + driver,
        [](const std::string& n) { return n.find(':') != std::string::npos; }));
  }
  GPULET_RETURN_IF_ERROR(render::RemoveStale(
      sys + "/kernel/iommu_groups", [](const std::string&) { return true; }));
  int next_group = 0;
  for (const Function& fn : functions) {
    bdfs.insert(fn.bdf);
    groups.insert(fn.group);
    next_group = std::max(next_group, std::stoi(fn.group) + 1);
    GPULET_RETURN_IF_ERROR(LinkFunction(tree, fn));
  }
  for (const Function& fn : functions) {
    if (fn.driver.empty()) continue;
    GPULET_RETURN_IF_ERROR(BindFunction(tree, fn.bdf, fn.driver));
  }
  for (const std::vector<Gpu>* list : {&machine.gpus, &machine.host_gpus}) {
    for (const Gpu& gpu : *list) {
      GPULET_RETURN_IF_ERROR(
          RenderMdevs(tree, gpu, &next_group, &groups, &uuids));
    }
  }
  GPULET_RETURN_IF_ERROR(render::RemoveStale(
      sys + "/bus/mdev/devices",
      [&](const std::string& n) { return !uuids.contains(n); }));
  return render::RemoveStale(
      sys + "/bus/pci/devices", [&](const std::string& n) {
        return n.find(':') != std::string::npos && !bdfs.contains(n);
      });
}

}  // namespace gpulet::sim
