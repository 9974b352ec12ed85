#include "src/model/allocation/preferred_handler.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/allocation/simple_preferred.h"
#include "src/model/allocation/topology_preferred.h"

namespace gpulet::allocation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Four GPUs (NVML index = position): 0-1 and 2-3 share 4 NVLinks, every
// other pair is SYSTEM.
std::shared_ptr<const ScoreMatrix> Pairs() {
  std::vector<int64_t> s(16, 10 * kUnitScale);
  for (int i = 0; i < 4; ++i) s[i * 4 + i] = 0;
  s[0 * 4 + 1] = s[1 * 4 + 0] = 410 * kUnitScale;
  s[2 * 4 + 3] = s[3 * 4 + 2] = 410 * kUnitScale;
  return std::make_shared<ScoreMatrix>(std::vector<unsigned>{0, 1, 2, 3}, s);
}

std::string Replica(int gpu, int r) {
  return "GPU-" + std::to_string(gpu) + "::" + std::to_string(r);
}

// replicas[g] replicas of GPU g; NUMA node 0 for GPUs 0-1, 1 for 2-3.
pluginapi::DeviceSnapshot Replicas(std::vector<int> replicas) {
  pluginapi::DeviceSnapshot snap;
  for (int g = 0; g < static_cast<int>(replicas.size()); ++g) {
    for (int r = 0; r < replicas[g]; ++r) {
      pluginapi::Device d;
      d.id = Replica(g, r);
      d.gpu_index = g;
      d.replica = r;
      d.numa_nodes = {g < 2 ? 0 : 1};
      snap.devices.push_back(d);
    }
  }
  return snap;
}

// Every device of the snapshot except `taken`.
std::vector<std::string> AllBut(const pluginapi::DeviceSnapshot& snap,
                                const std::vector<std::string>& taken) {
  std::vector<std::string> out;
  for (const pluginapi::Device& d : snap.devices) {
    if (std::find(taken.begin(), taken.end(), d.id) == taken.end()) {
      out.push_back(d.id);
    }
  }
  return out;
}

std::vector<std::string> Ask(const pluginapi::DeviceSnapshot& snap,
                             const std::vector<std::string>& taken,
                             const std::vector<std::string>& must, int size,
                             SharedPolicy policy = SharedPolicy::kDistributed,
                             std::shared_ptr<const ScoreMatrix> m = Pairs()) {
  auto handler = MakePreferredHandler(std::move(m), {policy});
  auto got = handler(snap, AllBut(snap, taken), must, size);
  EXPECT_TRUE(got.ok()) << got.status();
  return got.ok() ? *got : std::vector<std::string>{};
}

TEST(DistributedTest, TwoReplicasLandOnALinkedPair) {
  EXPECT_THAT(Ask(Replicas({4, 4, 4, 4}), {}, {}, 2),
              ElementsAre("GPU-0::0", "GPU-1::0"));
}

TEST(DistributedTest, LoadComesBeforeTopology) {
  // GPUs 0 and 1 already run replicas: the idle GPUs 2 and 3 win.
  EXPECT_THAT(
      Ask(Replicas({4, 4, 4, 4}), {"GPU-0::0", "GPU-0::1", "GPU-1::0"}, {}, 2),
      ElementsAre("GPU-2::0", "GPU-3::0"));
}

TEST(DistributedTest, AmongEquallyLoadedGpusTopologyDecides) {
  // GPU 2 is busy; of 0, 1, 3 the linked pair 0-1 wins.
  EXPECT_THAT(Ask(Replicas({4, 4, 4, 4}), {"GPU-2::0"}, {}, 2),
              ElementsAre("GPU-0::0", "GPU-1::0"));
}

TEST(DistributedTest, MustIncludeDrawsItsLinkedPeer) {
  EXPECT_THAT(Ask(Replicas({4, 4, 4, 4}), {}, {"GPU-2::1"}, 2),
              ElementsAre("GPU-2::1", "GPU-3::0"));
}

TEST(DistributedTest, MoreReplicasThanGpusFillEvenly) {
  EXPECT_THAT(Ask(Replicas({4, 4, 4, 4}), {}, {}, 6),
              ElementsAre("GPU-0::0", "GPU-0::1", "GPU-1::0", "GPU-1::1",
                          "GPU-2::0", "GPU-3::0"));
}

TEST(DistributedTest, WithoutTopologyNumaDecides) {
  EXPECT_THAT(Ask(Replicas({4, 4, 4, 4}), {}, {"GPU-2::0"}, 2,
                  SharedPolicy::kDistributed, nullptr),
              ElementsAre("GPU-2::0", "GPU-3::0"));
}

TEST(FillToLevelTest, FillsTheLeastLoadedFirst) {
  std::vector<Unit> units(3);
  units[0].load = 0;
  units[1].load = 2;
  units[2].load = 1;
  pluginapi::Device d;
  for (Unit& u : units) u.free.assign(5, &d);
  WaterFill w = FillToLevel(units, 4);  // 0->2 (2), 2->2 (1), then 1 extra
  EXPECT_THAT(w.take, ElementsAre(2, 0, 1));
  EXPECT_EQ(w.level, 2);
  EXPECT_EQ(w.extras, 1);
  EXPECT_THAT(w.eligible, ElementsAre(0, 1, 2));
}

TEST(PackedTest, FillsOneGpu) {
  EXPECT_THAT(Ask(Replicas({4, 4, 4, 4}), {}, {}, 3, SharedPolicy::kPacked),
              ElementsAre("GPU-0::0", "GPU-0::1", "GPU-0::2"));
}

TEST(PackedTest, PrefersTheMostAllocatedGpu) {
  EXPECT_THAT(
      Ask(Replicas({4, 4, 4, 4}), {"GPU-2::0"}, {}, 3, SharedPolicy::kPacked),
      ElementsAre("GPU-2::1", "GPU-2::2", "GPU-2::3"));
}

TEST(PackedTest, SpillsOntoTheLinkedGpu) {
  EXPECT_THAT(Ask(Replicas({4, 4, 4, 4}), {"GPU-2::0", "GPU-2::1", "GPU-2::2"},
                  {}, 3, SharedPolicy::kPacked),
              ElementsAre("GPU-2::3", "GPU-3::0", "GPU-3::1"));
}

TEST(PackedTest, MustIncludeCountsAsAllocated) {
  EXPECT_THAT(
      Ask(Replicas({4, 4, 4, 4}), {}, {"GPU-1::3"}, 2, SharedPolicy::kPacked),
      ElementsAre("GPU-1::3", "GPU-1::0"));
}

// MIG devices: caps[g] free 1g devices on GPU g (GPU instances 1..caps[g]).
pluginapi::DeviceSnapshot Mig(std::vector<int> caps, int replicas = 0) {
  pluginapi::DeviceSnapshot snap;
  for (int g = 0; g < static_cast<int>(caps.size()); ++g) {
    for (int k = 0; k < caps[g]; ++k) {
      for (int r = 0; r < std::max(replicas, 1); ++r) {
        pluginapi::Device d;
        d.id = "MIG-" + std::to_string(g) + "-" + std::to_string(k + 1);
        if (replicas > 0) d.id += "::" + std::to_string(r);
        d.gpu_index = g;
        d.gpu_instance_id = k + 1;
        d.compute_instance_id = 0;
        d.replica = replicas > 0 ? r : -1;
        snap.devices.push_back(d);
      }
    }
  }
  return snap;
}

TEST(MigTest, TightestSingleGpu) {
  pluginapi::DeviceSnapshot snap = Mig({2, 3, 7, 1});
  EXPECT_THAT(Ask(snap, {}, {}, 3),
              ElementsAre("MIG-1-1", "MIG-1-2", "MIG-1-3"));
  EXPECT_THAT(Ask(snap, {}, {}, 2), ElementsAre("MIG-0-1", "MIG-0-2"));
  EXPECT_EQ(Ask(snap, {}, {}, 4).front(), "MIG-2-1");
}

TEST(MigTest, TwoGpusWhenNeededTightestPair) {
  // 9 devices: {0,2} (9) fits tighter than {1,2} (10), both score SYSTEM.
  EXPECT_THAT(Ask(Mig({2, 3, 7, 1}), {}, {}, 9),
              ElementsAre("MIG-0-1", "MIG-0-2", "MIG-2-1", "MIG-2-2", "MIG-2-3",
                          "MIG-2-4", "MIG-2-5", "MIG-2-6", "MIG-2-7"));
}

TEST(MigTest, MustIncludeGpuFirstThenItsLinkedPeer) {
  EXPECT_THAT(Ask(Mig({2, 3, 7, 2}), {}, {"MIG-3-2"}, 3),
              ElementsAre("MIG-3-2", "MIG-3-1", "MIG-2-1"));
}

TEST(MigTest, SharedMigDevicesStayOnOneGpu) {
  EXPECT_THAT(Ask(Mig({2, 2}, 2), {}, {}, 2),
              ElementsAre("MIG-0-1::0", "MIG-0-2::0"));
  EXPECT_THAT(Ask(Mig({2, 2}, 2), {}, {}, 2, SharedPolicy::kPacked),
              ElementsAre("MIG-0-1::0", "MIG-0-1::1"));
}

pluginapi::DeviceSnapshot FullGpus() {
  pluginapi::DeviceSnapshot snap;
  for (int g = 0; g < 4; ++g) {
    pluginapi::Device d;
    d.id = "GPU-" + std::to_string(g);
    d.gpu_index = g;
    d.numa_nodes = {g < 2 ? 0 : 1};
    snap.devices.push_back(d);
  }
  return snap;
}

TEST(DispatchTest, FullGpusUseBestSetOrSimpleWithoutMatrix) {
  pluginapi::DeviceSnapshot snap = FullGpus();
  const std::vector<std::string> avail = {"GPU-1", "GPU-2", "GPU-3"};
  auto got = PreferredAllocation(Pairs(), {}, snap, avail, {}, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, *TopologyPreferred(*Pairs(), snap, avail, {}, 2));
  EXPECT_THAT(*got, ElementsAre("GPU-2", "GPU-3"));
  got = PreferredAllocation(nullptr, {}, snap, avail, {"GPU-1"}, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, *allocation::SimplePreferred(snap, avail, {"GPU-1"}, 2));
}

TEST(DispatchTest, InvalidRequestsNameTheProblem) {
  pluginapi::DeviceSnapshot snap = Replicas({2, 2});
  auto handler = MakePreferredHandler(Pairs(), {});
  auto got = handler(snap, {"GPU-0::0", "GPU-9::9"}, {}, 1);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr("unknown device: GPU-9::9"));
  got = handler(snap, {"GPU-0::0"}, {"GPU-1::0"}, 1);
  EXPECT_THAT(got.status().message(), HasSubstr("GPU-1::0"));
  got = handler(snap, {"GPU-0::0", "GPU-0::1"}, {}, 3);
  EXPECT_THAT(got.status().message(), HasSubstr("exceeds the 2 available"));
  got = handler(snap, {"GPU-0::0"}, {}, 0);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  got = handler(snap, {"GPU-0::0", "GPU-0::1"}, {"GPU-0::0", "GPU-0::1"}, 1);
  EXPECT_THAT(got.status().message(), HasSubstr("more than allocation_size"));
}

TEST(DispatchTest, MatrixMissingAGpuFallsBackToNuma) {
  // The matrix knows GPUs 0-3; the snapshot has a fifth GPU.
  EXPECT_THAT(Ask(Replicas({1, 1, 1, 1, 1}), {}, {"GPU-4::0"}, 2),
              ElementsAre("GPU-4::0", "GPU-2::0"));
}

}  // namespace
}  // namespace gpulet::allocation
