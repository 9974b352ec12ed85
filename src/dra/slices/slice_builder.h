// The node's ResourceSlices (resource.k8s.io/v1) as JSON values: one pool
// named after the node, a device per GPU and per MIG device, split over as
// many slices as the API's size limits need. Pure; Publisher
// (publisher.h) puts them on the API server.
//
// A GPU with MIG enabled is published as its MIG devices only (its whole
// GPU cannot be used beside them). With partitionable_mig, each such GPU
// also gets a counter set (its memory and memory slices) in a slice of
// counters, and each MIG device consumes its share of it, as the API's
// partitionable devices (DRAPartitionableDevices) describe a MIG layout.
// Unhealthy devices (named in NodeDevices::unhealthy, a MIG device whose
// parent GPU is, a GPU whose discovery failed) are left out, or published
// with one taint when taint_unhealthy (DRADeviceTaints, UnhealthyTaint). With
// memory_share_step, whole GPUs take several claims, each consuming part of
// their memory (DRAConsumableCapacity).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "src/base/config/config.h"
#include "src/dra/kubelet/device_health.h"
#include "src/dra/kubelet/device_names.h"
#include "src/gpu/device/gpu.h"

namespace gpulet::draslice {

// Limits of resource.k8s.io/v1 in Kubernetes 1.36 (ResourceSliceMax*).
inline constexpr size_t kMaxDevicesPerSlice = 128;
// When any device of the slice has taints or consumes counters.
inline constexpr size_t kMaxAdvancedDevicesPerSlice = 64;
inline constexpr size_t kMaxCounterSetsPerSlice = 8;
inline constexpr size_t kMaxAttributesAndCapacities = 32;

// The taint keys of unhealthy devices when taint_unhealthy is set: NVIDIA's
// DRA driver's for an Xid (its value the Xid) and for a GPU it cannot reach
// (a lost one), gpulet's for the other faults (a double-bit ECC error, a
// GPU that could not be queried or watched).
inline constexpr char kXidTaintKey[] = "gpu.nvidia.com/xid";
inline constexpr char kLostTaintKey[] = "gpu.nvidia.com/unreachable";
inline constexpr char kUnhealthyTaintKey[] = "gpu.nvidia.com/unhealthy";

struct SliceOptions {
  std::string driver = std::string(dra::kDriverName);
  std::string node_name;  // also the pool's name
  // When set, every slice is owned by the Node, so deleting the Node
  // deletes its slices.
  std::string node_uid;
  bool partitionable_mig = true;
  // Unhealthy devices published with a taint instead of left out: effect
  // lost_effect when their GPU is lost, unhealthy_effect otherwise.
  bool taint_unhealthy = false;
  config::TaintEffect unhealthy_effect = config::TaintEffect::kNoSchedule;
  config::TaintEffect lost_effect = config::TaintEffect::kNoExecute;
  // Set: each whole GPU is published shareable by memory
  // (DRAConsumableCapacity): allowMultipleAllocations, and its `memory`
  // capacity takes requests in multiples of this many bytes
  // (ShareableByMemory, device_json.h). Unset: a GPU is allocated whole.
  std::optional<uint64_t> memory_share_step;
};

// What the slices are built from: the discovered node and what the device
// model does not hold.
struct NodeDevices {
  device::Node node;
  // Per position in node.gpus (NvLinkDomains, node_facts.h); shorter or
  // empty: no NVLink domain known.
  std::vector<std::optional<int>> nvlink_domains;
  // Per position in node.gpus (ReadPcieRoot); shorter or empty: unknown.
  std::vector<std::string> pcie_roots;
  // DRA names of unhealthy devices ("gpu-3", "gpu-0-mig-19-6-1"), as
  // dra::DeviceHealthBoard::Unhealthy() gives them.
  std::set<std::string> unhealthy;
  // What made them unhealthy, by DRA name (DeviceHealthBoard::Faults());
  // a device of `unhealthy` without an entry here, or whose GPU has none,
  // is tainted as an unknown fault.
  std::map<std::string, dra::DeviceFault> faults;
};

// Sets taint_unhealthy and the effects as the config file's dra: section
// (or its flags) says.
void ApplyUnhealthyDevices(const config::Dra& dra, SliceOptions& options);

// The taint an unhealthy device with `fault` carries.
nlohmann::json UnhealthyTaint(const dra::DeviceFault& fault,
                              const SliceOptions& options);

// How many devices of the pool BuildSlices publishes untainted, publishes
// tainted, and leaves out as unhealthy (gpulet_dra_devices).
struct DeviceCounts {
  size_t healthy = 0;
  size_t tainted = 0;
  size_t withheld = 0;

  bool operator==(const DeviceCounts&) const = default;
};
DeviceCounts CountDevices(const NodeDevices& devices,
                          const SliceOptions& options);

// "<node>-<driver>-<k>", shortened (with a hash of the node name) to stay a
// DNS subdomain of at most 253 characters.
std::string SliceName(const std::string& node_name, const std::string& driver,
                      size_t k);

// The pool's slices at `generation`, counter slices first. Always at least
// one slice, so an empty pool is still published. A MIG device whose GPU
// instance NVML would not describe (no gi_placement) has no stable name
// and is left out. InvalidArgument, naming the field or device, for a node
// name or driver that is not a DNS subdomain, a negative generation or two
// devices with one name.
absl::StatusOr<std::vector<nlohmann::json>> BuildSlices(
    const NodeDevices& devices, const SliceOptions& options,
    int64_t generation);

}  // namespace gpulet::draslice
