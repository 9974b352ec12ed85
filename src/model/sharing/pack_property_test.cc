// Properties of the packing rule over random nodes:
//  - Pack's answer is a valid assignment, and "does not fit" agrees with a
//    brute-force search on small cases;
//  - when Pack says the pending requests fit, the kubelet may admit them in
//    any order, and each admission given the GPU ChooseGpu picks leaves the
//    rest fitting, so every one of them is admitted.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/model/sharing/pack.h"

namespace gpulet::sharing {
namespace {

struct Node {
  std::vector<GpuSpace> gpus;
  std::vector<Request> pending;
};

Node RandomNode(std::mt19937& rng, int max_gpus, int max_reqs) {
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  Node n;
  int gpus = pick(1, max_gpus);
  for (int g = 0; g < gpus; ++g) {
    int64_t units = pick(4, 16);
    n.gpus.push_back(GpuSpace{.uuid = "GPU-" + std::to_string(g),
                              .index = g,
                              .units = units,
                              .used = pick(0, static_cast<int>(units)),
                              .healthy = pick(0, 9) != 0});
  }
  int reqs = pick(0, max_reqs);
  for (int r = 0; r < reqs; ++r) {
    n.pending.push_back(
        Request{.key = "p" + std::to_string(r) + "/c", .units = pick(1, 8)});
  }
  return n;
}

bool Valid(const Node& n, const std::vector<int>& gpu_of) {
  std::vector<int64_t> load(n.gpus.size(), 0);
  for (size_t i = 0; i < n.pending.size(); ++i) {
    if (gpu_of[i] < 0 || gpu_of[i] >= static_cast<int>(n.gpus.size())) {
      return false;
    }
    load[gpu_of[i]] += n.pending[i].units;
  }
  for (size_t g = 0; g < n.gpus.size(); ++g) {
    if (load[g] > FreeUnits(n.gpus[g])) return false;
  }
  return true;
}

bool BruteForceFits(const Node& n) {
  std::vector<int> gpu_of(n.pending.size(), 0);
  const int g = static_cast<int>(n.gpus.size());
  while (true) {
    if (Valid(n, gpu_of)) return true;
    size_t i = 0;
    while (i < gpu_of.size() && ++gpu_of[i] == g) gpu_of[i++] = 0;
    if (i == gpu_of.size()) return false;
  }
}

TEST(PackProperty, AnswerIsValidAndExact) {
  for (unsigned seed = 1; seed <= 3000; ++seed) {
    std::mt19937 rng(seed);
    Node n = RandomNode(rng, 4, 6);
    auto r = Pack(n.gpus, n.pending);
    if (r.ok()) {
      EXPECT_TRUE(Valid(n, *r)) << "seed " << seed;
    } else {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound)
          << "seed " << seed << ": " << r.status();
      EXPECT_FALSE(BruteForceFits(n)) << "seed " << seed;
    }
  }
}

// Admits the pending requests of `n` in `order`, each on the GPU ChooseGpu
// picks; true when every admission keeps the rest fitting.
::testing::AssertionResult AdmitAll(Node n, const std::vector<size_t>& order,
                                    Policy policy) {
  std::vector<Request> left = n.pending;
  std::vector<bool> done(n.pending.size(), false);
  for (size_t step = 0; step < order.size(); ++step) {
    const Request& admitted = n.pending[order[step]];
    auto c = ChooseGpu(n.gpus, left, admitted.units, policy);
    if (!c.ok()) {
      return ::testing::AssertionFailure()
             << "admission " << step << " (" << admitted.key << ", "
             << admitted.units << " units): " << c.status();
    }
    if (!c->matched_pending || !c->pending_fits) {
      return ::testing::AssertionFailure()
             << "admission " << step << " (" << admitted.key
             << "): the rest no longer fits";
    }
    GpuSpace& g = n.gpus[c->gpu];
    if (FreeUnits(g) < admitted.units) {
      return ::testing::AssertionFailure()
             << "admission " << step << ": GPU " << c->gpu << " too full";
    }
    g.used += admitted.units;
    auto it = std::find_if(left.begin(), left.end(), [&](const Request& r) {
      return r.key == admitted.key;
    });
    left.erase(it);
  }
  return ::testing::AssertionSuccess();
}

TEST(PackProperty, EveryAdmissionOrderSucceeds) {
  int fitting = 0;
  for (unsigned seed = 1; seed <= 2000; ++seed) {
    std::mt19937 rng(seed);
    Node n = RandomNode(rng, 6, 9);
    if (!Pack(n.gpus, n.pending).ok()) continue;
    ++fitting;
    std::vector<size_t> order(n.pending.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (int shuffle = 0; shuffle < 5; ++shuffle) {
      std::shuffle(order.begin(), order.end(), rng);
      EXPECT_TRUE(AdmitAll(n, order, Policy::kBinpack)) << "seed " << seed;
      EXPECT_TRUE(AdmitAll(n, order, Policy::kSpread)) << "seed " << seed;
    }
  }
  EXPECT_GT(fitting, 500) << "the generator should make many fitting nodes";
}

}  // namespace
}  // namespace gpulet::sharing
