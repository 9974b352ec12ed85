// The kernel's side of PCI driver binding, acted out on a rendered sysfs
// tree: what happens to the `driver` links, the drivers' device links, the
// VFIO group nodes and the iommufd character devices when a function is
// bound or unbound. The node renderer uses it to lay out the machine file's
// bindings, and FakeKernel (fake_kernel.h) to react to `gpulet vfio bind`'s
// writes, so both produce the same tree.
//
// Layout (relative links, so the tree can move):
//   <sys>/devices/pci<domain>:00/<bdf>/{driver, iommu_group, driver_override,
//       class, vfio-dev/vfio<N>}
//   <sys>/bus/pci/devices/<bdf>, <sys>/bus/pci/drivers/<driver>/<bdf>
//   <sys>/kernel/iommu_groups/<group>/devices/<bdf>
//   <dev>/vfio/<group>       while any function of the group is on vfio-pci
//   <dev>/vfio/devices/vfio<N>   per function on vfio-pci, iommufd hosts only
//
// Thread safety: stateless; touches only the paths under the tree.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "sim/node_render.h"

namespace gpulet::sim {

// Character majors of the VFIO nodes the tree renders (the kernel allocates
// them dynamically; these are values real hosts commonly show).
inline constexpr unsigned kMiscMajor = 10;
inline constexpr unsigned kVfioContainerMinor = 196;  // /dev/vfio/vfio
inline constexpr unsigned kIommuMinor = 123;          // /dev/iommu
inline constexpr unsigned kVfioGroupMajor = 237;
inline constexpr unsigned kVfioCdevMajor = 238;

struct SysTree {
  std::string sys;  // <root>/sys
  std::string dev;  // <root>/dev
  DevNodes dev_nodes = DevNodes::kFiles;
  // A unix datagram socket FakeKernel sends its uevents to (the kernel's
  // NETLINK_KOBJECT_UEVENT message format); empty: none are sent.
  std::string uevent_socket = {};
};

// The directory of function `bdf` under <sys>/devices ("0000:3b:00.0").
std::string FunctionDir(const SysTree& tree, const std::string& bdf);

// Binds `bdf` to `driver`: the `driver` link and the driver's device link;
// for vfio-pci on an iommufd host (<dev>/iommu exists) a vfio-dev cdev. Then
// refreshes the group node. Errors: FailedPrecondition when already bound
// (as the kernel answers EBUSY), NotFound for a missing function or driver.
absl::Status BindFunction(const SysTree& tree, const std::string& bdf,
                          const std::string& driver);

// Unbinds `bdf` from `driver`; FailedPrecondition when it is not bound to
// that driver. Refreshes the group node.
absl::Status UnbindFunction(const SysTree& tree, const std::string& bdf,
                            const std::string& driver);

// Makes <dev>/vfio/<group> exist exactly when at least one member of the
// group is on vfio-pci, as the kernel keeps it: made when the first one
// binds, removed when the last one unbinds. Whether the group is viable
// (every member on vfio-pci or a bridge) does not matter here.
absl::Status RefreshGroupNode(const SysTree& tree, const std::string& group);

// The driver a function of `class_code` gets from the kernel when probed
// without driver_override ("nvidia" for NVIDIA display functions,
// snd_hda_intel for audio, ...); "" for none.
std::string NativeDriver(uint32_t class_code, uint16_t vendor);

}  // namespace gpulet::sim
