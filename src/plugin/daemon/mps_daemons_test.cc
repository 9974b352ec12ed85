#include "src/plugin/daemon/mps_daemons.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

pluginapi::Device Replica(const std::string& uuid, int gpu, int n) {
  pluginapi::Device d;
  d.id = uuid + "::" + std::to_string(n);
  d.visible_id = uuid;
  d.gpu_index = gpu;
  d.replica = n;
  return d;
}

pluginapi::Device Whole(const std::string& uuid, int gpu) {
  pluginapi::Device d;
  d.id = uuid;
  d.visible_id = uuid;
  d.gpu_index = gpu;
  return d;
}

PreparedResource Resource(const std::string& name,
                          std::vector<pluginapi::Device> devices) {
  PreparedResource p;
  p.spec.resource_name = name;
  p.spec.devices = std::move(devices);
  return p;
}

device::Node TwoGpus() {
  device::Node node;
  for (unsigned i = 0; i < 2; ++i) {
    device::Gpu gpu;
    gpu.index = i;
    gpu.uuid = i == 0 ? "GPU-a" : "GPU-b";
    gpu.memory_total_bytes = (i == 0 ? 15360ULL : 81559ULL) * 1024 * 1024;
    node.gpus.push_back(gpu);
  }
  return node;
}

config::Config MpsConfig() {
  config::Config c;
  c.sharing.mps = config::ReplicatedResources{};
  return c;
}

// NVIDIA's limits per replicated GPU, from its own replica count (GPU-a 3
// ways, GPU-b 2 ways under another name); an unshared GPU has no daemon.
TEST(PlanSharingMps, EachReplicatedGpuGetsItsOwnLimits) {
  std::vector<PreparedResource> prepared;
  prepared.push_back(Resource("nvidia.com/gpu",
                              {Replica("GPU-a", 0, 0), Replica("GPU-a", 0, 1),
                               Replica("GPU-a", 0, 2), Whole("GPU-c", 2)}));
  prepared.push_back(Resource(
      "nvidia.com/gpu.big", {Replica("GPU-b", 1, 0), Replica("GPU-b", 1, 1)}));
  const SharingMpsPlan plan = PlanSharingMps(MpsConfig(), prepared, TwoGpus());
  EXPECT_THAT(plan.replicas, ElementsAre("GPU-a", "GPU-b"));
  ASSERT_EQ(plan.daemons.size(), 2u);
  EXPECT_EQ(plan.daemons.at("GPU-a"),
            (mps::DaemonSettings{{"set_default_device_pinned_mem_limit 0 5120M",
                                  "set_default_active_thread_percentage 33"},
                                 true}));
  EXPECT_EQ(
      plan.daemons.at("GPU-b"),
      (mps::DaemonSettings{{"set_default_device_pinned_mem_limit 0 40779M",
                            "set_default_active_thread_percentage 50"},
                           true}));
}

// MIG replicas follow a daemon that never runs: Unhealthy, not unguarded.
TEST(PlanSharingMps, MigReplicasGetNoDaemon) {
  std::vector<PreparedResource> prepared;
  prepared.push_back(Resource(
      "nvidia.com/gpu", {Replica("MIG-x", 0, 0), Replica("MIG-x", 0, 1)}));
  const SharingMpsPlan plan = PlanSharingMps(MpsConfig(), prepared, TwoGpus());
  EXPECT_THAT(plan.replicas, ElementsAre("MIG-x"));
  EXPECT_THAT(plan.daemons, IsEmpty());
}

TEST(PlanSharingMps, NothingWithoutSharingMps) {
  config::Config c;
  c.sharing.time_slicing = config::ReplicatedResources{};
  std::vector<PreparedResource> prepared;
  prepared.push_back(Resource(
      "nvidia.com/gpu", {Replica("GPU-a", 0, 0), Replica("GPU-a", 0, 1)}));
  const SharingMpsPlan plan = PlanSharingMps(c, prepared, TwoGpus());
  EXPECT_THAT(plan.replicas, IsEmpty());
  EXPECT_THAT(plan.daemons, IsEmpty());
}

}  // namespace
}  // namespace gpulet::daemon
