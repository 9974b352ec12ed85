// The model one preferred-allocation request is decided on when kubelet
// devices are not one-per-GPU (time-slicing replicas, MIG devices): the
// request validated against an ID index of the snapshot, and its devices
// grouped into *units* — the underlying device several kubelet devices may
// share (a full GPU, or one MIG device of a GPU) — with each unit's load and
// the score-matrix position of its parent GPU.
//
// Built per request from plain values (pluginapi::Device fields, never IDs
// parsed); owns nothing but the index and unit lists, and points into the
// snapshot, which must outlive it. Thread safety: values; pure functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/model/allocation/score.h"
#include "src/model/pluginapi/device.h"

namespace gpulet::allocation {

// The request after validation, with every ID resolved to its device.
struct ResolvedRequest {
  std::vector<const pluginapi::Device*> available;     // unique, request order
  std::vector<const pluginapi::Device*> must_include;  // unique, request order
  int size = 0;
  bool any_mig = false;      // an available device is a MIG device
  bool any_replica = false;  // an available device is a replica
  bool shared_gpu = false;   // two available devices have one gpu_index
  bool unplaced = false;     // an available device has no gpu_index
};

// ValidatePreferred's checks and messages (INVALID_ARGUMENT naming the ID or
// field), in O(snapshot + request) through a hash index instead of a linear
// Find per ID: 768 replicas would otherwise cost ~10^6 string compares.
absl::StatusOr<ResolvedRequest> ResolveRequest(
    const pluginapi::DeviceSnapshot& snapshot,
    const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size);

// One underlying device (full GPU or MIG device) of the request.
struct Unit {
  int gpu = -1;  // score-matrix position of the parent GPU
  int gpu_index = -1;
  int gpu_instance_id = -1;
  int compute_instance_id = -1;
  // Devices of the unit already allocated (in the snapshot, not available)
  // plus the must_include devices on it: NVIDIA's "total - available" count,
  // which treats the request's own required replicas as allocated.
  int load = 0;
  int must = 0;  // must_include devices on the unit
  // Available devices not in must_include, in pick order (replica, then ID).
  std::vector<const pluginapi::Device*> free;
};

struct UnitModel {
  // The matrix positions refer to: the caller's, or one built from the
  // snapshot's NUMA nodes (see NumaMatrix) when there is none or it does not
  // know every GPU of the request.
  std::shared_ptr<const ScoreMatrix> matrix;
  // Units with a free device or a must_include device, ordered by (gpu,
  // gpu_instance_id, compute_instance_id).
  std::vector<Unit> units;
  int needed = 0;  // size - must_include
};

// REQUIRES: request came from ResolveRequest on `snapshot` and
// !request.unplaced. `m` may be null.
UnitModel BuildUnits(std::shared_ptr<const ScoreMatrix> m,
                     const pluginapi::DeviceSnapshot& snapshot,
                     const ResolvedRequest& request);

// A matrix over the snapshot's GPU indexes (gpu_index >= 0, ascending)
// scoring 1 for two GPUs sharing a NUMA node and 0 otherwise: topology's
// stand-in when NVML could not report it.
ScoreMatrix NumaMatrix(const pluginapi::DeviceSnapshot& snapshot);

}  // namespace gpulet::allocation
