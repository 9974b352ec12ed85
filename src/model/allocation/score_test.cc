#include "src/model/allocation/score.h"

#include "gtest/gtest.h"
#include "sim/profiles.h"
#include "src/model/testing/test_topologies.h"

namespace gpulet::allocation {
namespace {

TEST(ScoreTest, LevelBaselineMatchesNvidia) {
  EXPECT_EQ(LevelScore(NVML_TOPOLOGY_SYSTEM), 10);
  EXPECT_EQ(LevelScore(NVML_TOPOLOGY_NODE), 20);
  EXPECT_EQ(LevelScore(NVML_TOPOLOGY_HOSTBRIDGE), 30);
  EXPECT_EQ(LevelScore(NVML_TOPOLOGY_MULTIPLE), 40);
  EXPECT_EQ(LevelScore(NVML_TOPOLOGY_SINGLE), 50);
  EXPECT_EQ(LevelScore(NVML_TOPOLOGY_INTERNAL), 60);
  EXPECT_EQ(LevelScore(static_cast<nvmlGpuTopologyLevel_t>(7)), 0);
}

TEST(ScoreTest, NvSwitchLinksCount) {
  device::PairLinks links{device::LinkKind::kNvSwitch, 12, 0, 12};
  EXPECT_EQ(PairUnits(NVML_TOPOLOGY_NODE, links), 20 + 1200);
}

device::Topology TwoNumaFour() {
  // 0,1 on NUMA 0; 2 on NUMA 1; 3 without NUMA. All pairs NODE, no links.
  std::vector<device::TopologyGpu> gpus(4);
  for (unsigned i = 0; i < 4; ++i) gpus[i].index = 10 + i;
  gpus[0].numa_node = gpus[1].numa_node = 0;
  gpus[2].numa_node = 1;
  std::vector<device::TopologyPair> pairs(16);
  for (auto& p : pairs) p.level = NVML_TOPOLOGY_NODE;
  return device::Topology(gpus, pairs);
}

TEST(ScoreTest, NumaIsOnlyATieBreaker) {
  ScoreMatrix m = BuildScoreMatrix(TwoNumaFour());
  ASSERT_EQ(m.size(), 4);
  EXPECT_EQ(m.gpu_index()[2], 12u);
  EXPECT_EQ(m(0, 1), 20 * kUnitScale + 1);
  EXPECT_EQ(m(0, 2), 20 * kUnitScale);
  EXPECT_EQ(m(0, 3), 20 * kUnitScale);
  EXPECT_EQ(m(1, 0), m(0, 1));
  EXPECT_EQ(Units(SetScore(m, {0, 1, 2})), 60);
  EXPECT_EQ(SetScore(m, {0, 1, 2}) % kUnitScale, 1);
  // The largest possible NUMA bonus of a set stays below one unit.
  EXPECT_LT(91 * 90 / 2, kUnitScale);
}

TEST(ScoreTest, DgxH100PairsSeeEighteenSwitchedLinks) {
  absl::StatusOr<sim::Machine> machine = sim::LoadMachine("dgx-h100");
  ASSERT_TRUE(machine.ok()) << machine.status();
  device::Topology t = testing::FromMachine(*machine);
  ScoreMatrix m = BuildScoreMatrix(t);
  ASSERT_EQ(m.size(), 8);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      EXPECT_EQ(Units(m(a, b)), LevelScore(t.Level(a, b)) + 1800)
          << a << "," << b;
    }
  }
}

}  // namespace
}  // namespace gpulet::allocation
