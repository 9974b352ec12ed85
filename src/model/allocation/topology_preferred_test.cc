#include "src/model/allocation/topology_preferred.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::allocation {
namespace {

using ::testing::ElementsAre;

// Positions 0..3 hold NVML indexes 3,2,1,0; positions 0 and 3 (indexes 3
// and 0) share 4 NVLinks, everything else is SYSTEM.
ScoreMatrix Matrix() {
  std::vector<int64_t> s(16, 10 * kUnitScale);
  for (int i = 0; i < 4; ++i) s[i * 4 + i] = 0;
  s[0 * 4 + 3] = s[3 * 4 + 0] = 410 * kUnitScale;
  return ScoreMatrix({3, 2, 1, 0}, s);
}

pluginapi::DeviceSnapshot Snapshot() {
  pluginapi::DeviceSnapshot snap;
  for (int i = 0; i < 4; ++i) {
    pluginapi::Device d;
    d.id = "GPU-" + std::to_string(i);
    d.gpu_index = i;
    snap.devices.push_back(d);
  }
  return snap;
}

TEST(TopologyPreferredTest, PicksTheLinkedPairByGpuIndex) {
  auto handler = MakeTopologyPreferred(std::make_shared<ScoreMatrix>(Matrix()));
  auto got = handler(Snapshot(), {"GPU-1", "GPU-2", "GPU-3", "GPU-0"}, {}, 2);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre("GPU-3", "GPU-0"));
  got = handler(Snapshot(), {"GPU-1", "GPU-2", "GPU-3", "GPU-0"}, {"GPU-0"}, 2);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre("GPU-0", "GPU-3"));
}

TEST(TopologyPreferredTest, PassesValidationErrorsThrough) {
  auto got = TopologyPreferred(Matrix(), Snapshot(), {"GPU-1", "nope"}, {}, 1);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  got = TopologyPreferred(Matrix(), Snapshot(), {"GPU-1"}, {}, 2);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TopologyPreferredTest, FallsBackWhenDevicesDoNotMapToGpus) {
  pluginapi::DeviceSnapshot snap = Snapshot();
  snap.devices[1].gpu_index = -1;  // no GPU index: SimplePreferred's order
  auto got =
      TopologyPreferred(Matrix(), snap, {"GPU-3", "GPU-1", "GPU-0"}, {}, 2);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre("GPU-0", "GPU-3"));
  // Two devices on one GPU (replicas) fall back too.
  snap = Snapshot();
  snap.devices[2].gpu_index = 3;
  got = TopologyPreferred(Matrix(), snap, {"GPU-1", "GPU-2", "GPU-3"}, {}, 2);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre("GPU-1", "GPU-2"));
}

}  // namespace
}  // namespace gpulet::allocation
