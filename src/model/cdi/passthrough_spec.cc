#include "src/model/cdi/passthrough_spec.h"

#include "absl/strings/str_cat.h"
#include "src/model/cdi/validate.h"

namespace gpulet::cdi {
namespace {

DeviceNode Node(const std::string& dev_root, const std::string& path) {
  DeviceNode node;
  node.path = path;
  if (dev_root != "/dev") {
    node.host_path = dev_root + path.substr(std::string("/dev").size());
  }
  node.permissions = "rwm";
  return node;
}

}  // namespace

absl::StatusOr<Spec> BuildPassthroughSpec(const vfio::Inventory& inventory,
                                          const std::string& vendor,
                                          const std::string& dev_root) {
  Spec spec;
  spec.kind = absl::StrCat(vendor, "/", kPassthroughClass);
  if (inventory.iommufd) {
    spec.edits.device_nodes.push_back(Node(dev_root, "/dev/iommu"));
  }
  spec.edits.device_nodes.push_back(Node(dev_root, "/dev/vfio/vfio"));
  for (const vfio::Gpu& gpu : inventory.gpus) {
    if (gpu.function.driver != "vfio-pci" || gpu.function.iommu_group < 0) {
      continue;
    }
    Device device;
    device.name = gpu.function.address;
    device.edits.device_nodes.push_back(
        Node(dev_root, absl::StrCat("/dev/vfio/", gpu.function.iommu_group)));
    if (inventory.iommufd && !gpu.vfio_cdev.empty()) {
      device.edits.device_nodes.push_back(
          Node(dev_root, absl::StrCat("/dev/vfio/devices/", gpu.vfio_cdev)));
    }
    spec.devices.push_back(std::move(device));
  }
  if (spec.devices.empty()) {
    return absl::FailedPreconditionError(
        "no NVIDIA GPU is bound to vfio-pci: no passthrough spec to write");
  }
  spec.cdi_version = MinimumVersion(spec);
  if (absl::Status s = Validate(spec); !s.ok()) return s;
  return spec;
}

}  // namespace gpulet::cdi
