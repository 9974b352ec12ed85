// ComposeDeviceHealth: the health each advertised device gets from the
// daemon's health sources, as a pure function (values in, values out: no
// locks, no I/O), so that what a device list says is decided in one place.
//
// A device is Healthy when its base health (what its spec or a caller's
// reset says) is Healthy and no source says otherwise:
//   - the HealthBook (health monitor faults and discovery failures), for
//     every role: an entry for a GPU (found by the device's NVML index in
//     `gpu_uuids`) makes every device of that GPU Unhealthy: the GPU, its
//     replicas and its MIG devices; a MIG-scoped entry only the devices of
//     that GPU instance (and compute instance, when it names one), their
//     replicas included;
//   - MPS, for the memory-unit resource while MPS is on: a unit whose GPU's
//     control daemon is not up (not in `mps_up`); and for GPU resources, a
//     sharing.mps replica ("<uuid>::<n>") of a GPU in `mps_replicas` whose
//     daemon is not up;
//   - passthrough health, for passthrough resources: a device (PCI address
//     or mdev UUID) whose group is not viable.
// A source never makes a device Healthy that its base health marks
// Unhealthy.
//
// Thread safety: a pure function; the sources are read, never kept.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/model/pluginapi/device.h"
#include "src/model/resources/passthrough.h"
#include "src/plugin/daemon/health_book.h"

namespace gpulet::daemon {

// Which health sources apply to a resource's devices.
enum class ResourceRole {
  kGpus,         // GPUs, their replicas and MIG devices
  kMemoryUnits,  // sharing.memory's units (docs/sharing.md)
  kPassthrough,  // GPUs and mdevs for VMs (docs/passthrough.md)
};

struct HealthSources {
  // NVML index -> UUID of the node's GPUs; the book is keyed by UUID.
  const std::map<int, std::string>& gpu_uuids;
  const HealthBook& book;
  // Whether the memory units follow their GPU's MPS control daemon, and
  // the GPUs (UUIDs) whose daemon is up.
  bool mps_enabled = false;
  const std::set<std::string>& mps_up;
  // The GPUs (UUIDs) whose sharing.mps replicas follow their daemon.
  const std::set<std::string>& mps_replicas;
  // By PCI address or mdev UUID.
  const std::map<std::string, resources::PassthroughHealth>& passthrough;
};

// The GPU (UUID) whose MPS control daemon a device depends on, when its
// role has one: a memory unit's GPU, or the device a replica
// ("<uuid>::<n>") shares; empty otherwise.
std::string MpsDaemonGpu(const pluginapi::Device& device, ResourceRole role);

// `devices` with each one's health composed from its base health and the
// sources that apply to `role`.
std::vector<pluginapi::Device> ComposeDeviceHealth(
    std::vector<pluginapi::Device> devices, ResourceRole role,
    const HealthSources& sources);

}  // namespace gpulet::daemon
