// Replica policies: which replicas (time-slicing or MPS devices, several per
// GPU or per MIG device) a request should take, NVIDIA's
// sharedDevicesAllocationPolicy (distributed | packed) first, topology next.
// docs/allocation.md ("Replicas") compares this with NVIDIA's
// internal/rm/allocate.go.
//
// Thread safety: pure functions.
#pragma once

#include <vector>

#include "src/model/allocation/request_units.h"
#include "src/model/pluginapi/device.h"

namespace gpulet::allocation {

// Mirrors config::SharedDevicesAllocationPolicy without depending on config.
enum class SharedPolicy { kDistributed, kPacked };

// The water-filling of the distributed policy: how many replicas each unit
// (same order as `units`) must get so that the replicas go, one at a time,
// to a unit with the fewest allocated (NVIDIA's greedy), before any free
// choice; `level` is the load every unit that still has replicas left is
// filled to; `extras` the replicas still to place, each on a distinct
// `eligible` unit (load == level, replicas left), where any choice gives
// the same load profile.
struct WaterFill {
  std::vector<int> take;
  int level = 0;
  int extras = 0;
  std::vector<int> eligible;  // indexes into units, ascending
};
WaterFill FillToLevel(const std::vector<Unit>& units, int needed);

// Returns model.needed devices (never must_include ones), in answer order.
//
// kDistributed: FillToLevel, then the extras. With one unit per GPU (full
// GPU replicas) they go first to GPUs the request does not touch yet —
// chosen by BestSet so that, with must_include's and the forced GPUs, the
// set of GPUs scores highest — then to touched ones with the fewest picks.
// With MIG units (several per GPU) they go where SelectGpus puts them:
// fewest, best-connected GPUs.
//
// kPacked: repeatedly the unit with the most allocated replicas, ties to a
// unit on a GPU already in the answer, then one that can hold everything
// still needed, then the best-connected to the answer's GPUs, then the most
// free replicas, then the lowest position; it is drained before the next.
std::vector<const pluginapi::Device*> PickReplicas(const UnitModel& model,
                                                   SharedPolicy policy,
                                                   bool units_share_gpus);

}  // namespace gpulet::allocation
