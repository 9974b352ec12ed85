// Seeded property tests of the replica and MIG policies on random topologies
// (testing::RandomTopology) against brute-force oracles written from the
// documented guarantees, not from the implementation.
#include <algorithm>
#include <functional>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "src/model/allocation/preferred_handler.h"
#include "src/model/pluginapi/preferred_request.h"
#include "src/model/testing/test_topologies.h"

namespace gpulet::allocation {
namespace {

struct Case {
  std::shared_ptr<const ScoreMatrix> m;
  pluginapi::DeviceSnapshot snap;
  std::vector<std::string> available;
  std::vector<std::string> must;
  int size = 0;
  int gpus = 0;
};

// Per-GPU facts of a case: load (allocated + must) and free devices.
struct GpuCounts {
  std::vector<int> load, free, must, avail;
};

GpuCounts Count(const Case& c) {
  GpuCounts k;
  k.load.assign(c.gpus, 0);
  k.free.assign(c.gpus, 0);
  k.must.assign(c.gpus, 0);
  k.avail.assign(c.gpus, 0);
  for (const pluginapi::Device& d : c.snap.devices) {
    const bool avail = std::count(c.available.begin(), c.available.end(), d.id);
    const bool must = std::count(c.must.begin(), c.must.end(), d.id);
    if (avail) ++k.avail[d.gpu_index];
    if (must) ++k.must[d.gpu_index];
    if (!avail || must) ++k.load[d.gpu_index];
    if (avail && !must) ++k.free[d.gpu_index];
  }
  return k;
}

// `per_gpu(rng, g)` devices on each of n GPUs; each allocated with p = 0.3.
Case MakeCase(uint32_t seed, int n, bool mig, int max_per_gpu, int max_needed) {
  std::mt19937 rng(seed);
  auto pick = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  Case c;
  c.gpus = n;
  c.m = std::make_shared<ScoreMatrix>(
      BuildScoreMatrix(testing::RandomTopology(seed, n)));
  for (int g = 0; g < n; ++g) {
    const int count = pick(mig ? 0 : 1, max_per_gpu);
    for (int k = 0; k < count; ++k) {
      pluginapi::Device d;
      d.gpu_index = g;
      if (mig) {
        d.id = "MIG-" + std::to_string(g) + "-" + std::to_string(k);
        d.gpu_instance_id = k;
        d.compute_instance_id = 0;
      } else {
        d.id = "GPU-" + std::to_string(g) + "::" + std::to_string(k);
        d.replica = k;
      }
      c.snap.devices.push_back(d);
      if (pick(0, 9) >= 3) c.available.push_back(d.id);
    }
  }
  if (c.available.empty()) return c;
  std::shuffle(c.available.begin(), c.available.end(), rng);
  const int avail = static_cast<int>(c.available.size());
  const int must = pick(0, std::min(2, avail));
  c.must.assign(c.available.begin(), c.available.begin() + must);
  std::shuffle(c.available.begin(), c.available.end(), rng);
  c.size = pick(std::max(1, must), std::min(avail, must + max_needed));
  return c;
}

std::vector<std::string> Answer(const Case& c, SharedPolicy policy) {
  auto got =
      PreferredAllocation(c.m, {policy}, c.snap, c.available, c.must, c.size);
  EXPECT_TRUE(got.ok()) << got.status();
  if (!got.ok()) return {};
  auto request =
      pluginapi::ValidatePreferred(c.snap, c.available, c.must, c.size);
  EXPECT_TRUE(request.ok());
  EXPECT_TRUE(pluginapi::CheckPreferredAnswer(*request, *got).ok());
  // Deterministic, and independent of the order the kubelet lists devices.
  std::vector<std::string> reversed(c.available.rbegin(), c.available.rend());
  auto again =
      PreferredAllocation(c.m, {policy}, c.snap, reversed, c.must, c.size);
  EXPECT_TRUE(again.ok() && *again == *got);
  return *got;
}

std::vector<int> Picks(const Case& c, const std::vector<std::string>& answer) {
  std::vector<int> x(c.gpus, 0);
  for (const std::string& id : answer) {
    if (std::count(c.must.begin(), c.must.end(), id)) continue;
    ++x[c.snap.Find(id)->gpu_index];
  }
  return x;
}

std::vector<int> Profile(const GpuCounts& k, const std::vector<int>& x) {
  std::vector<int> p(x.size());
  for (size_t g = 0; g < x.size(); ++g) p[g] = k.load[g] + x[g];
  std::sort(p.begin(), p.end(), std::greater<>());
  return p;
}

int64_t GpuSetScore(const Case& c, const GpuCounts& k,
                    const std::vector<int>& x) {
  std::vector<int> set;
  for (int g = 0; g < c.gpus; ++g) {
    if (x[g] > 0 || k.must[g] > 0) set.push_back(g);
  }
  return SetScore(*c.m, set);
}

// Calls f(x) for every way of taking `left` free replicas from GPUs >= g.
void ForEachPick(const GpuCounts& k, int g, int left, std::vector<int>& x,
                 const std::function<void(const std::vector<int>&)>& f) {
  if (g == static_cast<int>(x.size())) {
    if (left == 0) f(x);
    return;
  }
  for (int t = 0; t <= std::min(left, k.free[g]); ++t) {
    x[g] = t;
    ForEachPick(k, g + 1, left - t, x, f);
  }
  x[g] = 0;
}

TEST(DistributedPropertyTest, SpreadFirstThenBestGpuSet) {
  int checked = 0, multi_gpu = 0;
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    Case c = MakeCase(seed, 2 + seed % 7, false, 4, 8);
    if (c.size == 0) continue;
    const std::vector<std::string> answer =
        Answer(c, SharedPolicy::kDistributed);
    ASSERT_EQ(answer.size(), static_cast<size_t>(c.size)) << "seed " << seed;
    const GpuCounts k = Count(c);
    const std::vector<int> ours = Picks(c, answer);
    // Oracle: the lexicographically smallest load profile (sorted
    // descending) over every possible pick, then the best GPU-set score
    // among the picks reaching it.
    std::vector<int> best_profile;
    int64_t best_score = -1;
    std::vector<int> x(c.gpus, 0);
    const int needed = c.size - static_cast<int>(c.must.size());
    ForEachPick(k, 0, needed, x, [&](const std::vector<int>& pick) {
      std::vector<int> p = Profile(k, pick);
      const int64_t s = GpuSetScore(c, k, pick);
      if (best_profile.empty() || p < best_profile) {
        best_profile = p;
        best_score = s;
      } else if (p == best_profile) {
        best_score = std::max(best_score, s);
      }
    });
    ASSERT_EQ(Profile(k, ours), best_profile) << "seed " << seed;
    ASSERT_EQ(GpuSetScore(c, k, ours), best_score) << "seed " << seed;
    ++checked;
    if (std::count_if(ours.begin(), ours.end(), [](int t) { return t > 0; }) >
        1) {
      ++multi_gpu;
    }
  }
  EXPECT_GT(checked, 2500);
  EXPECT_GT(multi_gpu, 1000);
}

TEST(PackedPropertyTest, MostAllocatedGpusDrainedInTurn) {
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    Case c = MakeCase(seed, 2 + seed % 7, false, 6, 10);
    if (c.size == 0) continue;
    const GpuCounts k = Count(c);
    const std::vector<int> x = Picks(c, Answer(c, SharedPolicy::kPacked));
    int partial = 0;
    for (int t = 0; t < c.gpus; ++t) {
      if (x[t] == 0) continue;
      if (x[t] < k.free[t]) ++partial;
      for (int u = 0; u < c.gpus; ++u) {
        // NVIDIA's packed order: no untouched GPU with free replicas was
        // more allocated than one the answer draws from.
        if (x[u] == 0 && k.free[u] > 0) {
          ASSERT_LE(k.load[u], k.load[t]) << "seed " << seed;
        }
      }
    }
    ASSERT_LE(partial, 1) << "seed " << seed;
  }
}

TEST(ReplicaPropertyTest, SixteenGpusValidAndDeterministic) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    Case c = MakeCase(seed, 16, false, 48, 40);
    if (c.size == 0) continue;
    Answer(c, SharedPolicy::kDistributed);
    Answer(c, SharedPolicy::kPacked);
  }
}

TEST(MigPropertyTest, FewestGpusThenBestConnected) {
  int checked = 0, one_gpu = 0;
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    Case c = MakeCase(seed, 1 + seed % 8, true, 7, 14);
    if (c.size == 0) continue;
    const GpuCounts k = Count(c);
    const std::vector<int> x = Picks(c, Answer(c, SharedPolicy::kDistributed));
    std::vector<int> used;
    for (int g = 0; g < c.gpus; ++g) {
      if (x[g] > 0 || k.must[g] > 0) used.push_back(g);
    }
    // Oracle over every GPU subset holding must_include's GPUs.
    size_t fewest = c.gpus + 1;
    int64_t best = -1;
    for (uint32_t mask = 0; mask < (1u << c.gpus); ++mask) {
      std::vector<int> set;
      int cap = 0;
      bool ok = true;
      for (int g = 0; g < c.gpus; ++g) {
        const bool in = mask & (1u << g);
        if (k.must[g] > 0 && !in) ok = false;
        if (in) {
          set.push_back(g);
          cap += k.avail[g];
        }
      }
      if (!ok || cap < c.size) continue;
      if (set.size() < fewest) best = -1;
      if (set.size() <= fewest) {
        fewest = set.size();
        best = std::max(best, SetScore(*c.m, set));
      }
    }
    ASSERT_EQ(used.size(), fewest) << "seed " << seed;
    ASSERT_EQ(SetScore(*c.m, used), best) << "seed " << seed;
    ++checked;
    if (fewest == 1) ++one_gpu;
  }
  EXPECT_GT(checked, 2000);
  EXPECT_GT(one_gpu, 500);
}

}  // namespace
}  // namespace gpulet::allocation
