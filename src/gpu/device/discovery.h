// Discovery: reads the GPUs of this node through nvml::Library into the
// plain device model (gpu.h). This and topology.h are the only places in the
// device layer that call NVML.
//
// Optional facts degrade instead of failing: a driver without
// nvmlDeviceGetNumaNodeId falls back to sysfs, a GPU without MIG support is
// reported as not MIG-capable, a missing serial stays empty. Every other NVML
// failure is returned, naming the GPU and the NVML call, unless
// DiscoveryOptions::tolerate_gpu_failures: then a failure of one GPU only
// marks that GPU (Gpu::failure) and discovery goes on with the others.
// Failures of the node itself (driver version, device count) always fail.
//
// Thread safety: Discover() may run concurrently with other Library users;
// it keeps no state of its own.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/nvml/library.h"

namespace gpulet::device {

struct DiscoveryOptions {
  // Root of the sysfs tree, for the NUMA node fallback. Tests point it at a
  // temporary directory.
  std::string sysfs_root = "/sys";
  // A GPU whose queries fail is kept with Gpu::failure set instead of failing
  // the whole discovery. Its record is taken from `previous` (same index and,
  // when read, the same UUID) when that node knew it, else it holds the
  // fields read before the failure; a GPU whose UUID is unknown (no handle)
  // is still listed, with an empty uuid, so callers can report it.
  bool tolerate_gpu_failures = false;
  // An earlier discovery of this node (a reload's previous session); not
  // owned, may be null.
  const Node* previous = nullptr;
};

// REQUIRES: lib.Init() has succeeded and Shutdown() has not been called yet.
absl::StatusOr<Node> Discover(nvml::Library& lib,
                              const DiscoveryOptions& options = {});

// NUMA node of the PCI device `bus_id` (any spelling) read from
// <sysfs_root>/bus/pci/devices/<domain:bus:dev.fn>/numa_node. nullopt when the
// file is missing, unparseable or says -1 (no affinity).
std::optional<int> ReadSysfsNumaNode(const std::string& sysfs_root,
                                     const std::string& bus_id);

// PCI class of the device `bus_id` (any spelling) as sysfs spells it
// ("0x030200" for a 3D controller, "0x030000" for a VGA controller), from
// <sysfs_root>/bus/pci/devices/<domain:bus:dev.fn>/class. nullopt when the
// file is missing or empty.
std::optional<std::string> ReadSysfsPciClass(const std::string& sysfs_root,
                                             const std::string& bus_id);

}  // namespace gpulet::device
