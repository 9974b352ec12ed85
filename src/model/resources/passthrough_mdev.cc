#include "src/model/resources/passthrough_mdev.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace gpulet::resources {
namespace {

constexpr char kVfioPci[] = "vfio-pci";

const vfio::Gpu* FindGpu(const vfio::Inventory& inventory,
                         const std::string& address) {
  for (const vfio::Gpu& gpu : inventory.gpus) {
    if (gpu.function.address == address) return &gpu;
  }
  return nullptr;
}

pluginapi::Device MakeMdevDevice(const vfio::Mdev& mdev,
                                 const vfio::Gpu* parent,
                                 const PassthroughHealth& health) {
  pluginapi::Device d;
  d.id = mdev.uuid;
  d.visible_id = mdev.uuid;
  d.healthy = health.healthy;
  if (parent != nullptr && parent->function.numa_node >= 0) {
    d.numa_nodes = {parent->function.numa_node};
  }
  if (mdev.iommu_group >= 0) {
    d.device_nodes.push_back(absl::StrCat("/dev/vfio/", mdev.iommu_group));
  }
  return d;
}

}  // namespace

PassthroughHealth CheckMdevHealth(const vfio::Mdev& mdev,
                                  const vfio::Inventory& inventory,
                                  const vfio::Roots& roots) {
  const std::string who = absl::StrCat("mediated device ", mdev.uuid);
  if (mdev.iommu_group < 0) {
    return {false, absl::StrCat(who, ": no iommu_group link")};
  }
  const std::filesystem::path node =
      vfio::GroupDevicePath(roots, mdev.iommu_group);
  if (!internal::Exists(node)) {
    return {false, absl::StrCat(who, ": IOMMU group ", mdev.iommu_group, ": ",
                                node.string(), " does not exist")};
  }
  const vfio::Gpu* parent = FindGpu(inventory, mdev.parent);
  if (parent == nullptr) {
    return {false, absl::StrCat(who, ": parent GPU ",
                                mdev.parent.empty() ? "(unknown)" : mdev.parent,
                                " is not in sysfs")};
  }
  const std::string& driver = parent->function.driver;
  if (driver.empty() || driver == kVfioPci) {
    return {false,
            absl::StrCat(who, ": parent GPU ", mdev.parent, " is bound to ",
                         driver.empty() ? "no driver" : driver,
                         ", not the vGPU manager's driver")};
  }
  return {true, ""};
}

void internal::PlanMdevs(const vfio::Inventory& inventory,
                         const config::Passthrough& config,
                         const std::string& socket_prefix,
                         std::map<std::string, ResourceSpec>& by_name,
                         PassthroughPlan& plan) {
  const vfio::Roots roots = RootsOf(config);
  for (const vfio::Mdev& mdev : inventory.mdevs) {
    const std::string suffix = vfio::MdevResourceName(mdev.type_name);
    if (suffix.empty()) {
      plan.errors.push_back(absl::StrCat(
          "mediated device ", mdev.uuid, " is not advertised: ",
          mdev.type_id.empty()
              ? "no mdev_type link"
              : absl::StrCat("type ", mdev.type_id, " has no usable name"),
          " (sysfs under ", config.sys_root, ")"));
      continue;
    }
    PassthroughHealth health = CheckMdevHealth(mdev, inventory, roots);
    const vfio::Gpu* parent = FindGpu(inventory, mdev.parent);
    const std::string name = absl::StrCat("nvidia.com/", suffix);
    ResourceSpec& spec = by_name[name];
    spec.resource_name = name;
    spec.socket_name = SocketNameFor(socket_prefix, name);
    spec.devices.push_back(MakeMdevDevice(mdev, parent, health));
    plan.mdev_resources.insert(name);
    plan.mdev_ids.insert(mdev.uuid);
    if (!mdev.parent.empty()) plan.selected.insert(mdev.parent);
    if (parent != nullptr && !parent->physfn.empty()) {
      plan.selected.insert(parent->physfn);
    }
    plan.health[mdev.uuid] = std::move(health);
  }
}

}  // namespace gpulet::resources
