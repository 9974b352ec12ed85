// Passthrough resources: the GPUs the `passthrough` section selects, as the
// kubelet resources KubeVirt and Kata consume (docs/passthrough.md).
//
//   - One resource per resource name, nvidia.com/<NAME> (vfio::ResourceName:
//     the config's override, gpulet's table, pci.ids, "10DE_<ID>"), one
//     device per GPU function; companion functions of its IOMMU group
//     (audio, USB-C, ...) are never devices.
//   - Device ID and visible ID = the PCI address ("0000:3b:00.0"); NUMA node
//     from sysfs; device_nodes = the group node "/dev/vfio/<group>" and, on
//     an iommufd host, the cdev "/dev/vfio/devices/vfioN".
//   - A device is healthy when its group is viable (every function bound to
//     vfio-pci or a bridge) and its group node exists under the dev root.
//   - A GPU selected for passthrough is taken out of the NVML node
//     (WithoutPassthrough), whatever driver it is bound to, so it is never a
//     container GPU; a GPU not selected is never a passthrough device.
//   - With `mdevs` on, the mediated devices (vGPU instances) too: one
//     resource per mdev type, nvidia.com/<vfio::MdevResourceName(type name)>,
//     one device per mdev whose ID is its UUID, NUMA node its parent's,
//     device node its own group node; healthy while that node exists and
//     its parent GPU is in sysfs on a driver other than vfio-pci. Their
//     parents leave the container world like selected GPUs.
//
// Thread safety: pure functions, apart from the group-node probes named.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/base/config/config.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/vfio/vfio.h"
#include "src/model/pluginapi/handlers.h"
#include "src/model/resources/resources.h"

namespace gpulet::resources {

// KubeVirt's variable for a resource: "PCI_RESOURCE_" + the name in upper
// case with '.' and '/' as '_' ("nvidia.com/GH100" ->
// "PCI_RESOURCE_NVIDIA_COM_GH100").
std::string KubevirtEnvName(const std::string& resource_name);
// The same for a mediated-device resource: "MDEV_" + KubevirtEnvName
// ("nvidia.com/GRID_A100-4C" -> "MDEV_PCI_RESOURCE_NVIDIA_COM_GRID_A100-4C").
std::string KubevirtMdevEnvName(const std::string& resource_name);

// The health of one selected GPU, and why it is not healthy.
struct PassthroughHealth {
  bool healthy = false;
  std::string reason;  // empty when healthy
  bool operator==(const PassthroughHealth&) const = default;
};

// Viability, then the group node <dev>/vfio/<group> (probed).
PassthroughHealth CheckPassthroughHealth(const vfio::Gpu& gpu,
                                         const vfio::Roots& roots);

// An mdev's group link and node <dev>/vfio/<group> (probed), then its
// parent in `inventory`: present and bound to a driver, not vfio-pci.
PassthroughHealth CheckMdevHealth(const vfio::Mdev& mdev,
                                  const vfio::Inventory& inventory,
                                  const vfio::Roots& roots);

// The health of device `id` (a GPU's PCI address or an mdev's UUID) in a
// fresh inventory; Unhealthy "<id> is no longer in sysfs" when it is gone.
PassthroughHealth RecheckPassthroughHealth(const std::string& id,
                                           const vfio::Inventory& inventory,
                                           const vfio::Roots& roots);

struct PassthroughPlan {
  // By resource name; devices by PCI address, health from
  // CheckPassthroughHealth.
  std::vector<ResourceSpec> resources;
  // PCI address (sysfs form) -> health, for every selected GPU.
  std::map<std::string, PassthroughHealth> health;
  // The selected GPUs' addresses, and the parents of the advertised mdevs
  // (and their physical functions): out of the container resources.
  std::set<std::string> selected;
  // The mdev resources' names, and their devices' UUIDs (also in health).
  std::set<std::string> mdev_resources;
  std::set<std::string> mdev_ids;
  // One message per selector that matched no GPU, naming it, and per mdev
  // left out (no type), naming it and why.
  std::vector<std::string> errors;
};

// The roots of a passthrough section.
vfio::Roots RootsOf(const config::Passthrough& config);

// `keep`: addresses selected before (a plan made again while serving):
// selected whatever their driver now, so a GPU that leaves vfio-pci stays a
// passthrough device, Unhealthy with the reason, until a reload. A GPU on
// vfio-pci that nothing selects is out of the container resources too
// (never a container GPU), with a message in errors.
PassthroughPlan PlanPassthrough(const vfio::Inventory& inventory,
                                const config::Passthrough& config,
                                const std::string& socket_prefix,
                                const std::set<std::string>& keep = {});

// `node` without the GPUs whose PCI address is in `selected`.
device::Node WithoutPassthrough(device::Node node,
                                const std::set<std::string>& selected);

// Allocate for a passthrough resource: DeviceSpecs /dev/vfio/vfio and each
// device's nodes (host path = host_dev_root + the path without "/dev",
// permissions "mrw"; /dev/iommu first on an iommufd host) and
// KubevirtEnvName(resource)=<addresses, comma-joined, in request order>
// (for mdevs, KubevirtMdevEnvName(resource)=<UUIDs>).
// Each group node is probed under dev_root first: a vanished one fails the
// request (FailedPrecondition naming the group and the device) and is
// reported to `on_vanished(address, reason)` (may be null).
struct PassthroughAllocateOptions {
  std::string resource_name;
  std::filesystem::path dev_root = "/dev";
  std::filesystem::path host_dev_root = "/dev";
  bool iommufd = false;
  std::function<void(const std::string&, const std::string&)> on_vanished;
  bool mdev = false;  // a mediated-device resource
};
pluginapi::AllocateHandler MakePassthroughAllocate(
    PassthroughAllocateOptions options);

}  // namespace gpulet::resources
