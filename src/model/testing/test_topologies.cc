#include "src/model/testing/test_topologies.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>
#include <random>
#include <tuple>

#include "src/gpu/device/nvlink_count.h"

namespace gpulet::allocation::testing {
namespace {

// Calls f(set) for every subset of `available` of `size` holding `must`.
template <typename F>
void ForEachSet(const std::vector<int>& available, const std::vector<int>& must,
                int size, F f) {
  const int n = static_cast<int>(available.size());
  uint32_t must_mask = 0;
  for (int p : must) {
    for (int i = 0; i < n; ++i) {
      if (available[i] == p) must_mask |= 1u << i;
    }
  }
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (std::popcount(mask) != size || (mask & must_mask) != must_mask) {
      continue;
    }
    std::vector<int> set;
    for (int i = 0; i < n; ++i) {
      if (mask & (1u << i)) set.push_back(available[i]);
    }
    f(set);
  }
}

}  // namespace

device::Topology FromMachine(const sim::Machine& machine) {
  const size_t n = machine.gpus.size();
  std::vector<device::TopologyGpu> gpus;
  std::vector<device::GpuLinks> links;
  for (size_t i = 0; i < n; ++i) {
    const sim::Gpu& g = machine.gpus[i];
    device::TopologyGpu t;
    t.index = static_cast<unsigned>(i);
    t.uuid = g.uuid;
    t.bus_id = g.bus_id;
    if (g.numa_node >= 0) t.numa_node = g.numa_node;
    gpus.push_back(t);
    device::GpuLinks gl{g.bus_id, {}};
    for (const sim::NvLink& l : g.nvlinks) {
      if (!l.active) continue;
      std::string remote = l.remote_bus_id;
      if (remote.empty() && l.peer_gpu >= 0) {
        remote = machine.gpus[l.peer_gpu].bus_id;
      }
      gl.links.push_back(device::NvLinkEnd{l.remote_type, remote});
    }
    links.push_back(std::move(gl));
  }
  std::vector<std::vector<device::PairLinks>> counted =
      device::CountNvLinks(links);
  std::vector<device::TopologyPair> pairs(n * n);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      pairs[a * n + b].level = machine.topology[a][b];
      pairs[a * n + b].links = counted[a][b];
    }
  }
  return device::Topology(std::move(gpus), std::move(pairs));
}

device::Topology RandomTopology(uint32_t seed, int n) {
  std::mt19937 rng(seed);
  auto pick = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  static constexpr nvmlGpuTopologyLevel_t kLevels[] = {
      NVML_TOPOLOGY_SINGLE, NVML_TOPOLOGY_MULTIPLE, NVML_TOPOLOGY_HOSTBRIDGE,
      NVML_TOPOLOGY_NODE, NVML_TOPOLOGY_SYSTEM};
  std::vector<device::TopologyGpu> gpus(n);
  std::vector<int> fabric(n);
  for (int i = 0; i < n; ++i) {
    gpus[i].index = static_cast<unsigned>(i);
    int numa = pick(-1, 1);
    if (numa >= 0) gpus[i].numa_node = numa;
    fabric[i] = pick(0, 3) < 2 ? 0 : pick(1, 2);  // 0: on no fabric
  }
  std::vector<device::TopologyPair> pairs(n * n);
  for (int a = 0; a < n; ++a) {
    pairs[a * n + a].level = NVML_TOPOLOGY_INTERNAL;
    for (int b = a + 1; b < n; ++b) {
      device::TopologyPair p;
      p.level = kLevels[pick(0, 4)];
      p.links.direct = pick(0, 9) < 3 ? static_cast<unsigned>(pick(1, 4)) : 0;
      if (fabric[a] != 0 && fabric[a] == fabric[b]) p.links.switched = 12;
      p.links.count = p.links.direct + p.links.switched;
      p.links.kind = p.links.switched > 0 ? device::LinkKind::kNvSwitch
                     : p.links.direct > 0 ? device::LinkKind::kDirect
                                          : device::LinkKind::kNone;
      pairs[a * n + b] = p;
      pairs[b * n + a] = p;
    }
  }
  return device::Topology(std::move(gpus), std::move(pairs));
}

int64_t BruteForceBest(const ScoreMatrix& m, const std::vector<int>& available,
                       const std::vector<int>& must, int size) {
  int64_t best = -1;
  ForEachSet(available, must, size, [&](const std::vector<int>& set) {
    best = std::max(best, SetScore(m, set));
  });
  return best;
}

std::vector<int> BruteForceBestSet(const ScoreMatrix& m,
                                   const std::vector<int>& available,
                                   const std::vector<int>& must, int size) {
  using Key = std::tuple<int64_t, int64_t, std::vector<int>>;
  std::optional<Key> best;
  ForEachSet(available, must, size, [&](std::vector<int> set) {
    std::sort(set.begin(), set.end());
    // Pair scores are positive; -1 stands for "no pair left" and, unlike
    // INT64_MIN, can be negated below.
    int64_t rest = -1;
    for (int a : available) {
      for (int b : available) {
        if (a < b && !std::binary_search(set.begin(), set.end(), a) &&
            !std::binary_search(set.begin(), set.end(), b)) {
          rest = std::max(rest, m(a, b));
        }
      }
    }
    // Higher score, higher rest, then lower set: negate the first two.
    Key key{-SetScore(m, set), -rest, set};
    if (!best.has_value() || key < *best) best = std::move(key);
  });
  return std::get<2>(*best);
}

ScoreMatrix NvidiaMatrix(const device::Topology& topology) {
  const size_t n = topology.size();
  std::vector<unsigned> index(n);
  std::vector<int64_t> scores(n * n, 0);
  for (size_t a = 0; a < n; ++a) {
    index[a] = topology.gpu(a).index;
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      scores[a * n + b] = kUnitScale * (LevelScore(topology.Level(a, b)) +
                                        100 * topology.Links(a, b).direct);
    }
  }
  return ScoreMatrix(std::move(index), std::move(scores));
}

std::vector<int> NvidiaBaseline(const device::Topology& topology,
                                const std::vector<int>& available,
                                const std::vector<int>& must, int size) {
  const ScoreMatrix m = NvidiaMatrix(topology);
  int64_t best = -1;
  std::vector<int> chosen;
  ForEachSet(available, must, size, [&](const std::vector<int>& set) {
    int64_t s = SetScore(m, set);
    if (s > best) std::tie(best, chosen) = std::make_pair(s, set);
  });
  return chosen;
}

}  // namespace gpulet::allocation::testing
