// Topology: how the GPUs of a node connect to each other and to the CPUs —
// PCIe common ancestor, NVLink count and kind, peer-to-peer capability per
// pair, NUMA node and CPU affinity per GPU.
//
// Built once from NVML by BuildTopology() (the only NVML-touching function
// here); afterwards a Topology is an immutable value with pure accessors, so
// allocation can query it millions of times without going back to NVML.
// Indexes are positions in Node::gpus.
//
// Thread safety: const methods may be called from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/device/nvlink_count.h"
#include "src/gpu/nvml/library.h"

namespace gpulet::device {

// nvmlDeviceGetP2PStatus for one ordered pair, per capability.
struct P2PStatus {
  nvmlGpuP2PStatus_t read = NVML_P2P_STATUS_UNKNOWN;
  nvmlGpuP2PStatus_t write = NVML_P2P_STATUS_UNKNOWN;
  nvmlGpuP2PStatus_t nvlink = NVML_P2P_STATUS_UNKNOWN;
  nvmlGpuP2PStatus_t atomics = NVML_P2P_STATUS_UNKNOWN;

  bool operator==(const P2PStatus&) const = default;
};

struct TopologyGpu {
  unsigned index = 0;
  std::string uuid;
  std::string bus_id;
  std::optional<int> numa_node;
  std::vector<unsigned> cpu_affinity;
};

struct TopologyPair {
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
  PairLinks links;
  P2PStatus p2p;  // from the first GPU to the second
};

class Topology {
 public:
  Topology() = default;
  // REQUIRES: pairs.size() == gpus.size() * gpus.size(), row-major.
  Topology(std::vector<TopologyGpu> gpus, std::vector<TopologyPair> pairs);

  size_t size() const { return gpus_.size(); }
  const std::vector<TopologyGpu>& gpus() const { return gpus_; }
  const TopologyGpu& gpu(size_t i) const { return gpus_[i]; }
  const TopologyPair& pair(size_t a, size_t b) const {
    return pairs_[a * gpus_.size() + b];
  }
  nvmlGpuTopologyLevel_t Level(size_t a, size_t b) const {
    return pair(a, b).level;
  }
  const PairLinks& Links(size_t a, size_t b) const { return pair(a, b).links; }

 private:
  std::vector<TopologyGpu> gpus_;
  std::vector<TopologyPair> pairs_;
};

// Reads common ancestors, NVLinks and P2P status for every GPU of `node`
// (as returned by Discover on the same library). Queries the driver cannot
// answer (NVML_ERROR_NOT_SUPPORTED, absent symbols) degrade: no NVLink, P2P
// "unknown", common ancestor SYS; any other NVML error is returned.
// REQUIRES: lib.Init() has succeeded.
absl::StatusOr<Topology> BuildTopology(nvml::Library& lib, const Node& node);

// "PIX", "PXB", "PHB", "NODE", "SYS", "X" (INTERNAL), as nvidia-smi prints
// them; "?" for values NVML may add later.
const char* TopologyLevelName(nvmlGpuTopologyLevel_t level);

// "OK", "chipset not supported", … for nvmlGpuP2PStatus_t.
const char* P2PStatusName(nvmlGpuP2PStatus_t status);

}  // namespace gpulet::device
