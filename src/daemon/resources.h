// Resources: which kubelet resources this node advertises and which devices
// each one lists, computed from the discovered device model. Pure mapping,
// table-tested; the daemon turns every ResourceSpec into one PluginServer.
//
// For now every full GPU is one device of "nvidia.com/gpu" (ID and
// NVIDIA_VISIBLE_DEVICES entry = the GPU's UUID), as NVIDIA's plugin does
// with its default flags. MIG strategies, replicas and renaming come with
// the configuration file.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "src/device/gpu.h"
#include "src/plugin/device_list.h"

namespace gpulet::daemon {

inline constexpr char kGpuResource[] = "nvidia.com/gpu";

struct ResourceSpec {
  std::string resource_name;  // "nvidia.com/gpu"
  std::string socket_name;    // "gpulet-gpu.sock", relative to the plugin dir
  std::vector<plugin::Device> devices;

  bool operator==(const ResourceSpec&) const = default;
};

// "<prefix>-<part of the resource name after its last '/'>.sock", e.g.
// ("gpulet", "nvidia.com/mig-1g.5gb") -> "gpulet-mig-1g.5gb.sock".
std::string SocketNameFor(const std::string& prefix,
                          const std::string& resource_name);

// One ResourceSpec per resource that has at least one device, ordered by
// resource name; empty when the node has no GPU.
std::vector<ResourceSpec> BuildResources(const device::Node& node,
                                         const std::string& socket_prefix);

}  // namespace gpulet::daemon
