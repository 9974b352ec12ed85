#include "src/model/resources/passthrough.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "src/gpu/device/pci_address.h"
#include "src/gpu/vfio/gpu_selector.h"
#include "src/model/resources/passthrough_mdev.h"

namespace gpulet::resources {
namespace {

constexpr char kVfioContainer[] = "/dev/vfio/vfio";
constexpr char kIommu[] = "/dev/iommu";

}  // namespace

bool internal::Exists(const std::filesystem::path& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

namespace {

using internal::Exists;

pluginapi::Device MakeDevice(const vfio::Gpu& gpu,
                             const PassthroughHealth& health) {
  pluginapi::Device d;
  d.id = gpu.function.address;
  d.visible_id = gpu.function.address;
  d.healthy = health.healthy;
  if (gpu.function.numa_node >= 0) d.numa_nodes = {gpu.function.numa_node};
  if (gpu.function.iommu_group >= 0) {
    d.device_nodes.push_back(
        absl::StrCat("/dev/vfio/", gpu.function.iommu_group));
  }
  if (!gpu.vfio_cdev.empty()) {
    d.device_nodes.push_back(absl::StrCat("/dev/vfio/devices/", gpu.vfio_cdev));
  }
  return d;
}

// "/dev/vfio/17" under another root: "<root>/vfio/17".
std::filesystem::path Under(const std::filesystem::path& root,
                            const std::string& dev_path) {
  std::string rest = dev_path.substr(std::string("/dev").size());
  return std::filesystem::path(root.string() + rest);
}

void AddSpec(v1beta1::ContainerAllocateResponse& response,
             const std::filesystem::path& host_root,
             const std::string& container_path) {
  for (const v1beta1::DeviceSpec& d : response.devices()) {
    if (d.container_path() == container_path) return;
  }
  v1beta1::DeviceSpec* spec = response.add_devices();
  spec->set_container_path(container_path);
  spec->set_host_path(Under(host_root, container_path).string());
  spec->set_permissions("mrw");
}

}  // namespace

std::string KubevirtEnvName(const std::string& resource_name) {
  std::string name = absl::AsciiStrToUpper(resource_name);
  std::replace(name.begin(), name.end(), '.', '_');
  std::replace(name.begin(), name.end(), '/', '_');
  return absl::StrCat("PCI_RESOURCE_", name);
}

std::string KubevirtMdevEnvName(const std::string& resource_name) {
  return absl::StrCat("MDEV_", KubevirtEnvName(resource_name));
}

vfio::Roots RootsOf(const config::Passthrough& config) {
  return vfio::Roots{config.sys_root, config.dev_root};
}

PassthroughHealth CheckPassthroughHealth(const vfio::Gpu& gpu,
                                         const vfio::Roots& roots) {
  vfio::Viability viability = vfio::CheckViability(gpu);
  if (!viability.viable) return {false, viability.reason};
  std::filesystem::path node =
      vfio::GroupDevicePath(roots, gpu.function.iommu_group);
  if (!Exists(node)) {
    return {false, absl::StrCat("IOMMU group ", gpu.function.iommu_group, ": ",
                                node.string(), " does not exist")};
  }
  return {true, ""};
}

PassthroughPlan PlanPassthrough(const vfio::Inventory& inventory,
                                const config::Passthrough& config,
                                const std::string& socket_prefix,
                                const std::set<std::string>& keep) {
  PassthroughPlan plan;
  const vfio::Roots roots = RootsOf(config);
  std::vector<bool> matched(config.devices.size(), false);
  std::map<std::string, ResourceSpec> by_name;
  for (const vfio::Gpu& gpu : inventory.gpus) {
    bool selected = keep.contains(gpu.function.address);
    for (size_t i = 0; i < config.devices.size(); ++i) {
      if (vfio::Selects(config.devices[i], gpu)) matched[i] = selected = true;
    }
    // A virtual function is given to VMs through its own driver, not here.
    if (!gpu.physfn.empty()) continue;
    if (!selected) {
      if (gpu.function.driver == "vfio-pci") {
        plan.selected.insert(gpu.function.address);
        plan.errors.push_back(absl::StrCat(
            "GPU ", gpu.function.address,
            " is bound to vfio-pci but no passthrough.devices entry selects "
            "it: it is served neither to containers nor to VMs"));
      }
      continue;
    }
    PassthroughHealth health = CheckPassthroughHealth(gpu, roots);
    const std::string name =
        absl::StrCat("nvidia.com/",
                     vfio::ResourceName(gpu.function.device,
                                        config.resource_names, config.pci_ids));
    ResourceSpec& spec = by_name[name];
    spec.resource_name = name;
    spec.socket_name = SocketNameFor(socket_prefix, name);
    spec.devices.push_back(MakeDevice(gpu, health));
    plan.selected.insert(gpu.function.address);
    plan.health[gpu.function.address] = std::move(health);
  }
  if (config.mdevs) {
    internal::PlanMdevs(inventory, config, socket_prefix, by_name, plan);
  }
  for (size_t i = 0; i < config.devices.size(); ++i) {
    if (matched[i]) continue;
    plan.errors.push_back(vfio::SelectsNothing(i, config.devices[i]));
  }
  for (auto& [name, spec] : by_name) plan.resources.push_back(std::move(spec));
  return plan;
}

PassthroughHealth RecheckPassthroughHealth(const std::string& id,
                                           const vfio::Inventory& inventory,
                                           const vfio::Roots& roots) {
  for (const vfio::Gpu& gpu : inventory.gpus) {
    if (gpu.function.address == id) return CheckPassthroughHealth(gpu, roots);
  }
  for (const vfio::Mdev& mdev : inventory.mdevs) {
    if (mdev.uuid == id) return CheckMdevHealth(mdev, inventory, roots);
  }
  return {false, absl::StrCat(id, " is no longer in sysfs")};
}

device::Node WithoutPassthrough(device::Node node,
                                const std::set<std::string>& selected) {
  std::erase_if(node.gpus, [&](const device::Gpu& gpu) {
    std::optional<device::PciAddress> a = device::ParsePciAddress(gpu.bus_id);
    return a.has_value() && selected.contains(device::SysfsBusId(*a));
  });
  return node;
}

pluginapi::AllocateHandler MakePassthroughAllocate(
    PassthroughAllocateOptions options) {
  return [o = std::move(options)](const pluginapi::DeviceSnapshot& snapshot,
                                  const std::vector<std::string>& ids)
             -> absl::StatusOr<v1beta1::ContainerAllocateResponse> {
    v1beta1::ContainerAllocateResponse response;
    if (o.iommufd) AddSpec(response, o.host_dev_root, kIommu);
    AddSpec(response, o.host_dev_root, kVfioContainer);
    std::vector<std::string> addresses;
    for (const std::string& id : ids) {
      const pluginapi::Device* d = snapshot.Find(id);
      if (d == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("unknown device ", id));
      }
      for (const std::string& node : d->device_nodes) {
        // Only the group node vanishes with its group; the cdev goes with it.
        if (node.starts_with("/dev/vfio/devices/")) {
          if (!o.iommufd) continue;
        } else if (!Exists(Under(o.dev_root, node))) {
          std::string reason = absl::StrCat(
              "IOMMU group ", node.substr(std::string("/dev/vfio/").size()),
              " of ", id, " is gone: ", Under(o.dev_root, node).string(),
              " does not exist");
          if (o.on_vanished) o.on_vanished(id, reason);
          return absl::FailedPreconditionError(reason);
        }
        AddSpec(response, o.host_dev_root, node);
      }
      if (std::find(addresses.begin(), addresses.end(), d->visible_id) ==
          addresses.end()) {
        addresses.push_back(d->visible_id);
      }
    }
    (*response.mutable_envs())[o.mdev ? KubevirtMdevEnvName(o.resource_name)
                                      : KubevirtEnvName(o.resource_name)] =
        absl::StrJoin(addresses, ",");
    return response;
  };
}

}  // namespace gpulet::resources
