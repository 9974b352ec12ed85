// BuildPassthroughSpec: the CDI spec of the node's passthrough GPUs, kind
// "<vendor>/pgpu", so Kata and other CDI-aware runtimes inject a GPU given
// to a VM by naming "nvidia.com/pgpu=0000:3b:00.0" (docs/passthrough.md).
//
// One device per NVIDIA GPU bound to vfio-pci, named by its PCI address,
// carrying its IOMMU group node /dev/vfio/<group> (and, on an iommufd host,
// its cdev /dev/vfio/devices/vfioN); the spec-wide edits carry the VFIO
// container node /dev/vfio/vfio (and /dev/iommu). Host paths are under
// `dev_root` when it is not "/dev". Pure: no file system.
//
// Thread safety: pure function.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "src/gpu/vfio/vfio.h"
#include "src/model/cdi/spec.h"

namespace gpulet::cdi {

inline constexpr char kPassthroughClass[] = "pgpu";

// FailedPrecondition when no GPU is bound to vfio-pci; InvalidArgument for a
// bad vendor. The spec is Validate()d, at its MinimumVersion.
absl::StatusOr<Spec> BuildPassthroughSpec(const vfio::Inventory& inventory,
                                          const std::string& vendor,
                                          const std::string& dev_root);

}  // namespace gpulet::cdi
