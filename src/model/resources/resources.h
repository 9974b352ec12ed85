// Resources: which kubelet resources this node advertises and which devices
// each one lists, computed from the discovered device model and the
// configuration, with NVIDIA k8s-device-plugin's rules:
//
//   - migStrategy none: every GPU (MIG mode or not) is a full GPU;
//     single: MIG-enabled GPUs are replaced by their MIG devices, all under
//     one resource, and the node must be uniform; mixed: full GPUs and MIG
//     devices side by side, MIG devices named per profile.
//   - resources.gpus / resources.mig map product names / MIG profiles to
//     resource names ('*' wildcard); defaults: nvidia.com/gpu for GPUs,
//     nvidia.com/gpu (single) or nvidia.com/mig-<profile> (mixed) for MIG.
//   - sharing.memory takes the GPUs it selects out of the resources above
//     and advertises them as memory units, "<uuid>::m<k>", under its own
//     resource name (memory_units.h).
//   - sharing (time-slicing or MPS) replaces the selected devices of a
//     resource by `replicas` devices each, "<id>::<n>", advertised under the
//     resource's rename (or "<name>.shared"); devices not selected stay.
//     Unlike NVIDIA, `rename`, `devices` and `resources` are applied, and a
//     resource may appear in several entries with disjoint device lists to
//     give GPUs different replica counts.
//
// Kubelet device IDs are always UUIDs (plus the replica suffix); what the
// container runtime is told (Device::visible_id) is the UUID or the index
// ("3", MIG "3:1") as deviceIDStrategy says.
//
// Thread safety: pure functions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/base/config/config.h"
#include "src/gpu/device/gpu.h"
#include "src/model/pluginapi/device.h"

namespace gpulet::resources {

inline constexpr char kGpuResource[] = "nvidia.com/gpu";

struct ResourceSpec {
  std::string resource_name;  // "nvidia.com/gpu"
  std::string socket_name;    // "gpulet-gpu.sock", relative to the plugin dir
  std::vector<pluginapi::Device> devices;
  bool operator==(const ResourceSpec&) const = default;
};

struct ResourceOptions {
  std::string socket_prefix = "gpulet";
  // The /dev/nvidia-caps/nvidia-cap<N> nodes of a MIG device's GPU instance
  // and compute instance; null or empty: none known.
  std::function<std::vector<std::string>(const device::Gpu&,
                                         const device::MigDevice&)>
      mig_caps_nodes;
};

// "<prefix>-<part of the resource name after its last '/'>.sock", e.g.
// ("gpulet", "nvidia.com/mig-1g.5gb") -> "gpulet-mig-1g.5gb.sock".
std::string SocketNameFor(const std::string& prefix,
                          const std::string& resource_name);

// "nvidia.com/mig-<profile>" with '+' turned into '.', NVIDIA's name for a
// MIG profile under the mixed strategy ("1g.10gb+me" -> "mig-1g.10gb.me").
std::string MixedMigResourceName(const std::string& profile);

// One ResourceSpec per resource that has at least one device, ordered by
// resource name; devices ordered by GPU index, MIG index, then replica.
// Empty when the node has no GPU. FailedPrecondition naming the GPU, profile
// or sharing entry when the node does not fit the configuration (a GPU no
// pattern matches, an invalid or non-uniform MIG layout under single, a
// device list naming a device that does not exist).
absl::StatusOr<std::vector<ResourceSpec>> BuildResources(
    const device::Node& node, const config::Config& config,
    const ResourceOptions& options = {});

}  // namespace gpulet::resources
