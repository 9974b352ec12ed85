#include "src/model/allocation/best_set.h"

#include <algorithm>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/profiles.h"
#include "src/model/testing/test_topologies.h"

namespace gpulet::allocation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Every pair scores `w`, except the listed overrides.
ScoreMatrix Uniform(int n, int64_t w) {
  std::vector<unsigned> index(n);
  std::vector<int64_t> s(n * n, w);
  for (int i = 0; i < n; ++i) {
    index[i] = i;
    s[i * n + i] = 0;
  }
  return ScoreMatrix(index, s);
}

void Set(ScoreMatrix& m, int a, int b, int64_t w) {
  std::vector<int64_t> s;
  const int n = m.size();
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) s.push_back(m(i, j));
  }
  s[a * n + b] = s[b * n + a] = w;
  m = ScoreMatrix(m.gpu_index(), s);
}

TEST(BestSetTest, RejectsImpossibleRequests) {
  ScoreMatrix m = Uniform(4, 10);
  auto msg = [&](std::vector<int> av, std::vector<int> must, int size) {
    absl::StatusOr<std::vector<int>> r = BestSet(m, av, must, size);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(r.status().message());
  };
  EXPECT_THAT(msg({0, 1}, {}, 0), HasSubstr("size must be at least 1"));
  EXPECT_THAT(msg({0, 1}, {}, 3), HasSubstr("exceeds the 2 available"));
  EXPECT_THAT(msg({0, 4}, {}, 1), HasSubstr("out of range: 4"));
  EXPECT_THAT(msg({0, 0}, {}, 1), HasSubstr("duplicate available position: 0"));
  EXPECT_THAT(msg({0, 1}, {2}, 1), HasSubstr("not available: 2"));
  EXPECT_THAT(msg({0, 1}, {1, 1}, 2), HasSubstr("duplicate must_include"));
  EXPECT_THAT(msg({0, 1, 2}, {0, 1}, 1), HasSubstr("more than size 1"));
}

TEST(BestSetTest, TiesGoToLowestIndices) {
  ScoreMatrix m = Uniform(8, 100);
  EXPECT_THAT(*BestSet(m, {7, 6, 5, 4, 3}, {}, 2), ElementsAre(3, 4));
  EXPECT_THAT(*BestSet(m, {7, 6, 5, 4, 3}, {6}, 2), ElementsAre(3, 6));
}

TEST(BestSetTest, TiesKeepTheBestPairForLater) {
  // {0,1} and {2,3} tie, and so do {0,2},{1,3}...; the strong pair 4-5
  // must survive a request that does not need it.
  ScoreMatrix m = Uniform(6, 10);
  Set(m, 4, 5, 500);
  Set(m, 0, 1, 500);
  EXPECT_THAT(*BestSet(m, {0, 1, 2, 3, 4, 5}, {}, 2), ElementsAre(0, 1));
  // With 0 forced every partner ties; 4 and 5 must stay together.
  EXPECT_THAT(*BestSet(m, {0, 2, 3, 4, 5}, {0}, 2), ElementsAre(0, 2));
}

TEST(BestSetTest, SizeEqualToMustIncludeReturnsIt) {
  ScoreMatrix m = Uniform(4, 10);
  EXPECT_THAT(*BestSet(m, {0, 1, 2, 3}, {3, 1}, 2), ElementsAre(1, 3));
}

// Checks BestSet on every size, with and without must_include, against the
// exhaustive optimum and the NVIDIA stand-in. Returns requests checked.
int CheckAllSizes(const device::Topology& t, uint32_t seed,
                  bool all_available = false) {
  const ScoreMatrix m = BuildScoreMatrix(t);
  const ScoreMatrix nv = testing::NvidiaMatrix(t);
  bool switched = false;
  for (size_t a = 0; a < t.size(); ++a) {
    for (size_t b = 0; b < t.size(); ++b) switched |= t.Links(a, b).switched;
  }
  std::mt19937 rng(seed);
  std::vector<int> available;
  for (int i = 0; i < m.size(); ++i) {
    if (all_available || rng() % 4 != 0) available.push_back(i);
  }
  if (available.empty()) available.push_back(0);
  std::shuffle(available.begin(), available.end(), rng);
  int checked = 0;
  const int n = static_cast<int>(available.size());
  for (int size = 1; size <= n; ++size) {
    std::vector<int> must(available.begin(),
                          available.begin() + rng() % (size + 1));
    for (const std::vector<int>& req : {std::vector<int>{}, must}) {
      absl::StatusOr<std::vector<int>> got = BestSet(m, available, req, size);
      EXPECT_TRUE(got.ok()) << got.status();
      if (!got.ok()) continue;
      EXPECT_EQ(got->size(), static_cast<size_t>(size));
      EXPECT_TRUE(std::is_sorted(got->begin(), got->end()));
      for (int p : req) EXPECT_TRUE(std::count(got->begin(), got->end(), p));
      EXPECT_EQ(SetScore(m, *got),
                testing::BruteForceBest(m, available, req, size))
          << "seed " << seed << " size " << size;
      EXPECT_EQ(*got, testing::BruteForceBestSet(m, available, req, size))
          << "tie-break, seed " << seed << " size " << size;
      std::vector<int> base = testing::NvidiaBaseline(t, available, req, size);
      EXPECT_GE(SetScore(m, *got), SetScore(m, base));
      // Without NVSwitch both scores count the same links, so we also match
      // NVIDIA's best under its own scoring.
      if (!switched) {
        EXPECT_GE(SetScore(nv, *got), SetScore(nv, base));
      }
      ++checked;
    }
  }
  return checked;
}

TEST(BestSetTest, MatchesBruteForceOnRandomTopologies) {
  int checked = 0;
  for (uint32_t seed = 1; seed <= 1000; ++seed) {
    const int n = 1 + static_cast<int>(seed % 12);
    checked += CheckAllSizes(testing::RandomTopology(seed, n), seed);
  }
  std::cout << "random n<=12: " << checked << " requests checked\n";
  EXPECT_GT(checked, 5000);
}

TEST(BestSetTest, MatchesBruteForceOnSixteenGpus) {
  int checked = 0;
  for (uint32_t seed = 5001; seed <= 5004; ++seed) {
    checked += CheckAllSizes(testing::RandomTopology(seed, 16), seed);
  }
  checked += CheckAllSizes(testing::RandomTopology(5005, 16), 5005, true);
  std::cout << "random n=16: " << checked << " requests checked\n";
}

TEST(BestSetTest, MatchesBruteForceOnEverySimulatorProfile) {
  int profiles = 0;
  for (const std::string& name : sim::ProfileNames()) {
    absl::StatusOr<sim::Machine> machine = sim::LoadMachine(name);
    ASSERT_TRUE(machine.ok()) << machine.status();
    if (machine->gpus.empty()) continue;
    ++profiles;
    const device::Topology t = testing::FromMachine(*machine);
    const int seeds = t.size() > 8 ? 3 : 20;
    CheckAllSizes(t, 99, /*all_available=*/true);
    for (int seed = 0; seed < seeds; ++seed) CheckAllSizes(t, 100 + seed);
  }
  EXPECT_GE(profiles, 5);
}

TEST(BestSetTest, IslandsTwoGpusStayInOneIsland) {
  absl::StatusOr<sim::Machine> machine = sim::LoadMachine("islands-16");
  ASSERT_TRUE(machine.ok()) << machine.status();
  const ScoreMatrix m = BuildScoreMatrix(testing::FromMachine(*machine));
  ASSERT_EQ(m.size(), 16);
  // One GPU busy in each island (0-7, 8-15).
  for (int busy0 = 0; busy0 < 8; ++busy0) {
    for (int busy1 = 8; busy1 < 16; ++busy1) {
      std::vector<int> available;
      for (int i = 0; i < 16; ++i) {
        if (i != busy0 && i != busy1) available.push_back(i);
      }
      absl::StatusOr<std::vector<int>> got = BestSet(m, available, {}, 2);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ((*got)[0] / 8, (*got)[1] / 8)
          << "busy " << busy0 << "," << busy1 << " got " << (*got)[0] << ","
          << (*got)[1];
      // Forcing a GPU keeps its partner in the same island.
      got = BestSet(m, available, {available.back()}, 2);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ((*got)[0] / 8, (*got)[1] / 8);
    }
  }
}

}  // namespace
}  // namespace gpulet::allocation
