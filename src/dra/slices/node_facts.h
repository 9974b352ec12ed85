// Facts about the node's GPUs that the device model does not carry and the
// ResourceSlices publish: each GPU's NVLink domain (from the topology
// model) and its PCIe root complex (from sysfs, as Kubernetes' own
// deviceattribute package reads it), and CollectNodeDevices, which puts
// them together with the device model for BuildSlices.
//
// Thread safety: NvLinkDomains is pure; ReadPcieRoot reads the file system
// and keeps no state.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "src/dra/slices/slice_builder.h"
#include "src/gpu/device/topology.h"

namespace gpulet::draslice {

// Per topology position: the GPU's NVLink domain, the smallest GPU index of
// the GPUs it reaches over NVLink (directly, through NVSwitches, or through
// other GPUs), so GPUs share a domain exactly when NVLink connects them.
// nullopt for a GPU with no NVLink peer.
std::vector<std::optional<int>> NvLinkDomains(const device::Topology& topology);

// "pci0000:00": the first directory under <sysfs_root>/devices on the path
// that <sysfs_root>/bus/pci/devices/<bus id> links to. "" when the link is
// missing or leads elsewhere.
std::string ReadPcieRoot(const std::string& sysfs_root,
                         const std::string& bus_id);

// What BuildSlices needs for `node`: its NVLink domains from `topology`
// (none when null) and its PCIe roots from `sysfs_root`; `unhealthy` as
// given.
NodeDevices CollectNodeDevices(device::Node node,
                               const device::Topology* topology,
                               const std::string& sysfs_root,
                               std::set<std::string> unhealthy);

}  // namespace gpulet::draslice
