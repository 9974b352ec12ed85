// Which GPU a command-line argument means, for `gpulet vfio bind|unbind`:
//   "3"                 the fourth NVIDIA GPU in PCI address order (sysfs:
//                       GPUs on vfio-pci count too, so the numbering does
//                       not shift as GPUs move between drivers; on a node
//                       with every GPU on nvidia it is NVML's order)
//   "0000:3b:00.0", "3b:00.0", "00000000:3B:00.0"   a PCI address
//   "GPU-<uuid>"        a UUID, through `uuid_addresses` (from NVML, which
//                       knows only GPUs on the nvidia driver)
// and which GPUs a configuration's passthrough.devices select (the daemon's
// passthrough resources and `gpulet vfio bind --config` agree on it).
//
// Thread safety: pure function.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/base/config/config.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio {

// NotFound naming the argument and listing the GPUs when nothing matches.
// `uuid_addresses`: upper-case UUID -> sysfs address.
absl::StatusOr<const Gpu*> SelectGpu(
    const Inventory& inventory, const std::string& argument,
    const std::map<std::string, std::string>& uuid_addresses);

// Whether passthrough.devices entry `selector` picks `gpu`: "vfio-pci" every
// GPU bound to vfio-pci, a PCI address that GPU, a device ID every GPU of
// that model.
bool Selects(const config::PassthroughSelector& selector, const Gpu& gpu);

// "passthrough.devices[<index>]: selects nothing: <what it names and why>".
std::string SelectsNothing(size_t index,
                           const config::PassthroughSelector& selector);

// The physical-function GPUs any entry of `config.devices` picks, in
// inventory order (virtual functions are never picked); one SelectsNothing
// message per entry that picks none in `unmatched`.
std::vector<const Gpu*> SelectedGpus(const Inventory& inventory,
                                     const config::Passthrough& config,
                                     std::vector<std::string>* unmatched);

}  // namespace gpulet::vfio
