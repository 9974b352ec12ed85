// Topology score for sets of full GPUs: how well a set of GPUs can talk to
// each other. A compact, immutable pair-score matrix is built once from a
// device::Topology (which itself is read from NVML once per daemon session),
// so allocation never goes back to NVML.
//
// Pair score, in "NVIDIA units" (the numbers go-gpuallocator uses, so figures
// compare directly):
//   common ancestor  SYSTEM 10, NODE 20, HOSTBRIDGE 30, MULTIPLE 40,
//                    SINGLE 50, INTERNAL 60 (anything else 0)
//   + 100 per NVLink between the two GPUs, direct or through a shared
//     NVSwitch fabric (NVIDIA counts switched pairs as having no NVLink).
// A same-NUMA-node bonus of 1 is added in a lower "tie-breaker" field: the
// stored value is units * kUnitScale + numa_bonus, and kUnitScale exceeds
// the number of pairs of any set we score, so NUMA locality only decides
// between sets whose NVIDIA-unit score is equal. Set score = sum over pairs.
//
// Thread safety: ScoreMatrix is a value; const use from any thread is safe.
#pragma once

#include <cstdint>
#include <vector>

#include "src/gpu/device/topology.h"

namespace gpulet::allocation {

// The tie-breaker field's width: at most kUnitScale - 1 pairs (91 GPUs).
inline constexpr int64_t kUnitScale = 4096;

// NVIDIA's baseline for a common ancestor level (SYSTEM 10 ... INTERNAL 60).
int64_t LevelScore(nvmlGpuTopologyLevel_t level);

// Pair score in NVIDIA units: LevelScore + 100 * links.count.
int64_t PairUnits(nvmlGpuTopologyLevel_t level, const device::PairLinks& links);

class ScoreMatrix {
 public:
  ScoreMatrix() = default;
  // REQUIRES: scores.size() == gpu_index.size()^2, symmetric, row-major.
  ScoreMatrix(std::vector<unsigned> gpu_index, std::vector<int64_t> scores);

  int size() const { return static_cast<int>(gpu_index_.size()); }
  // Combined score (units * kUnitScale + NUMA bonus) of positions a and b.
  int64_t operator()(int a, int b) const { return scores_[a * size() + b]; }
  // NVML index of the GPU at each position (Topology::gpu(i).index).
  const std::vector<unsigned>& gpu_index() const { return gpu_index_; }

 private:
  std::vector<unsigned> gpu_index_;
  std::vector<int64_t> scores_;
};

ScoreMatrix BuildScoreMatrix(const device::Topology& topology);

// Sum of pair scores over all pairs of `set` (positions; no duplicates).
int64_t SetScore(const ScoreMatrix& m, const std::vector<int>& set);

// The NVIDIA-unit part of a combined score.
inline int64_t Units(int64_t score) { return score / kUnitScale; }

}  // namespace gpulet::allocation
