// SelectGpus: which GPUs a request for several interchangeable items (MIG
// devices, or replicas spread over MIG devices) should draw from — as few
// GPUs as possible, then the best-connected ones, then the tightest fit —
// and PickMig, the MIG-device policy built on it.
//
// Thread safety: pure functions.
#pragma once

#include <vector>

#include "src/model/allocation/request_units.h"
#include "src/model/allocation/score.h"
#include "src/model/pluginapi/device.h"

namespace gpulet::allocation {

struct GpuTake {
  int gpu = -1;  // score-matrix position
  int count = 0;

  friend bool operator==(const GpuTake&, const GpuTake&) = default;
};

// Spreads `need` items over GPUs. capacity[g] is how many items GPU
// position g offers (capacity.size() == m.size()); `fixed` are positions
// already in the answer (must_include's GPUs), which cost nothing to use.
// The chosen new GPUs S, in order of preference:
//   1. fewest GPUs: |S| minimal such that capacity(fixed) + capacity(S) >=
//      need;
//   2. highest SetScore(fixed + S) (connected GPUs);
//   3. smallest capacity(S): the tightest fit, leaving large GPUs whole for
//      the next request (least fragmentation);
//   4. lexicographically lowest S.
// Exact over every |S|-subset up to kMaxSubsets of them; beyond that
// (dozens of MIG-capable GPUs) GPUs are added greedily by score then
// capacity. Items are then taken from the fixed GPUs, then S, each group
// by capacity ascending then position, so leftovers stay on the largest
// GPUs. Returns (gpu, count > 0) in that fill order, counts summing to
// `need`. REQUIRES: need >= 0 and total capacity >= need.
std::vector<GpuTake> SelectGpus(const ScoreMatrix& m,
                                const std::vector<int>& capacity,
                                const std::vector<int>& fixed, int need);

inline constexpr long kMaxSubsets = 200000;

// MIG devices (not shared): model.needed devices besides must_include, in
// answer order, drawn by SelectGpus from the GPUs' free MIG devices (the
// GPUs of must_include fixed); within a GPU by (GPU instance, compute
// instance).
std::vector<const pluginapi::Device*> PickMig(const UnitModel& model);

}  // namespace gpulet::allocation
