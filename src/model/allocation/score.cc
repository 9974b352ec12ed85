#include "src/model/allocation/score.h"

#include <utility>

namespace gpulet::allocation {

int64_t LevelScore(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
      return 60;
    case NVML_TOPOLOGY_SINGLE:
      return 50;
    case NVML_TOPOLOGY_MULTIPLE:
      return 40;
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return 30;
    case NVML_TOPOLOGY_NODE:
      return 20;
    case NVML_TOPOLOGY_SYSTEM:
      return 10;
  }
  return 0;
}

int64_t PairUnits(nvmlGpuTopologyLevel_t level,
                  const device::PairLinks& links) {
  return LevelScore(level) + 100 * static_cast<int64_t>(links.count);
}

ScoreMatrix::ScoreMatrix(std::vector<unsigned> gpu_index,
                         std::vector<int64_t> scores)
    : gpu_index_(std::move(gpu_index)), scores_(std::move(scores)) {}

ScoreMatrix BuildScoreMatrix(const device::Topology& topology) {
  const size_t n = topology.size();
  std::vector<unsigned> index(n);
  std::vector<int64_t> scores(n * n, 0);
  for (size_t a = 0; a < n; ++a) {
    index[a] = topology.gpu(a).index;
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      // Symmetrise from the lower position so a one-sided report cannot make
      // the matrix asymmetric (the search relies on w(a,b) == w(b,a)).
      size_t lo = a < b ? a : b, hi = a < b ? b : a;
      const std::optional<int>& na = topology.gpu(lo).numa_node;
      const std::optional<int>& nb = topology.gpu(hi).numa_node;
      bool same_numa = na.has_value() && nb.has_value() && *na == *nb;
      scores[a * n + b] =
          PairUnits(topology.Level(lo, hi), topology.Links(lo, hi)) *
              kUnitScale +
          (same_numa ? 1 : 0);
    }
  }
  return ScoreMatrix(std::move(index), std::move(scores));
}

int64_t SetScore(const ScoreMatrix& m, const std::vector<int>& set) {
  int64_t total = 0;
  for (size_t i = 0; i < set.size(); ++i) {
    for (size_t j = i + 1; j < set.size(); ++j) total += m(set[i], set[j]);
  }
  return total;
}

}  // namespace gpulet::allocation
