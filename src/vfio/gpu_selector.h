// Which GPU a command-line argument means, for `gpulet vfio bind|unbind`:
//   "3"                 the fourth NVIDIA GPU in PCI address order (sysfs:
//                       GPUs on vfio-pci count too, so the numbering does
//                       not shift as GPUs move between drivers; on a node
//                       with every GPU on nvidia it is NVML's order)
//   "0000:3b:00.0", "3b:00.0", "00000000:3B:00.0"   a PCI address
//   "GPU-<uuid>"        a UUID, through `uuid_addresses` (from NVML, which
//                       knows only GPUs on the nvidia driver)
//
// Thread safety: pure function.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "src/vfio/vfio.h"

namespace gpulet::vfio {

// NotFound naming the argument and listing the GPUs when nothing matches.
// `uuid_addresses`: upper-case UUID -> sysfs address.
absl::StatusOr<const Gpu*> SelectGpu(
    const Inventory& inventory, const std::string& argument,
    const std::map<std::string, std::string>& uuid_addresses);

}  // namespace gpulet::vfio
