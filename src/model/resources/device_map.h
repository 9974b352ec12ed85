// DeviceMap: the devices of each resource before they go to the kubelet, with
// what sharing needs to select them (UUID and index), and the sharing step
// itself. Internal to resources.cc; its own header so that replica
// expansion is table-tested on its own.
//
// Thread safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/base/config/config.h"
#include "src/model/pluginapi/device.h"

namespace gpulet::resources {

struct MappedDevice {
  pluginapi::Device device;  // id = uuid; replica = -1
  std::string uuid;          // "GPU-…" / "MIG-…"
  std::string index;         // "3", MIG "3:1"
  std::string parent_uuid;   // MIG devices: the GPU's UUID, else empty
  int order = 0;             // position on the node: GPU, then MIG device
};

// Resource name -> its devices in advertising order.
using DeviceMap = std::map<std::string, std::vector<MappedDevice>>;

// "<id>::<n>", NVIDIA's annotated ID of replica n.
std::string ReplicaId(const std::string& id, int n);

// Replaces the devices each entry of `section` selects by its replicas,
// moved to the entry's advertised name; `section_path` ("sharing.
// timeSlicing") names entries in errors. Entries naming a resource the node
// does not have are skipped, as NVIDIA skips them. Several entries may name
// one resource when their selections are disjoint.
absl::StatusOr<DeviceMap> ApplyReplicas(
    const config::ReplicatedResources& section, const std::string& section_path,
    DeviceMap devices);

}  // namespace gpulet::resources
