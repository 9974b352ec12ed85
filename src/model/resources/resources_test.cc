#include "src/model/resources/resources.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::resources {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

device::Gpu MakeGpu(unsigned index, std::string uuid, std::optional<int> numa,
                    std::string name = "NVIDIA A100-SXM4-40GB") {
  device::Gpu gpu;
  gpu.index = index;
  gpu.uuid = std::move(uuid);
  gpu.name = std::move(name);
  gpu.minor = index + 10;
  gpu.numa_node = numa;
  return gpu;
}

device::MigDevice MakeMig(unsigned mig_index, std::string uuid,
                          std::string profile, unsigned gi) {
  device::MigDevice m;
  m.mig_index = mig_index;
  m.uuid = std::move(uuid);
  m.profile = std::move(profile);
  m.gpu_instance_id = gi;
  m.compute_instance_id = 0;
  m.memory_bytes = profile == "1g.5gb" ? 5u << 30 : 20u << 30;
  return m;
}

// GPU 0: MIG with 1g.5gb (MIG-a) and 3g.20gb (MIG-b); GPU 1: no MIG.
device::Node MixedNode() {
  device::Node node;
  device::Gpu g0 = MakeGpu(0, "GPU-0", 0);
  g0.mig_enabled = true;
  g0.mig_devices = {MakeMig(0, "MIG-a", "1g.5gb", 7),
                    MakeMig(1, "MIG-b", "3g.20gb", 1)};
  node.gpus = {g0, MakeGpu(1, "GPU-1", 1)};
  return node;
}

// Two GPUs, both MIG with two 1g.5gb each.
device::Node UniformMigNode() {
  device::Node node;
  for (unsigned i = 0; i < 2; ++i) {
    device::Gpu g = MakeGpu(i, "GPU-" + std::to_string(i), 0);
    g.mig_enabled = true;
    g.mig_devices = {MakeMig(0, "MIG-" + std::to_string(i) + "a", "1g.5gb", 7),
                     MakeMig(1, "MIG-" + std::to_string(i) + "b", "1g.5gb", 8)};
    node.gpus.push_back(g);
  }
  return node;
}

device::Node FourGpus() {
  device::Node node;
  for (unsigned i = 0; i < 4; ++i) {
    node.gpus.push_back(MakeGpu(i, "GPU-" + std::to_string(i), i / 2));
  }
  return node;
}

std::vector<std::string> Names(const std::vector<ResourceSpec>& specs) {
  std::vector<std::string> names;
  for (const ResourceSpec& s : specs) names.push_back(s.resource_name);
  return names;
}

std::vector<std::string> Ids(const ResourceSpec& spec) {
  std::vector<std::string> ids;
  for (const pluginapi::Device& d : spec.devices) ids.push_back(d.id);
  return ids;
}

std::vector<std::string> Visible(const ResourceSpec& spec) {
  std::vector<std::string> ids;
  for (const pluginapi::Device& d : spec.devices) ids.push_back(d.visible_id);
  return ids;
}

TEST(SocketNameForTest, UsesPartAfterLastSlash) {
  struct Case {
    std::string prefix, resource, want;
  } cases[] = {
      {"gpulet", "nvidia.com/gpu", "gpulet-gpu.sock"},
      {"gpulet", "nvidia.com/mig-1g.5gb", "gpulet-mig-1g.5gb.sock"},
      {"gpulet", "nvidia.com/gpu.shared", "gpulet-gpu.shared.sock"},
      {"nvidia", "nvidia.com/gpu", "nvidia-gpu.sock"},
      {"gpulet", "gpu", "gpulet-gpu.sock"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SocketNameFor(c.prefix, c.resource), c.want) << c.resource;
  }
}

TEST(MixedMigResourceNameTest, PlusBecomesDot) {
  EXPECT_EQ(MixedMigResourceName("1g.5gb"), "nvidia.com/mig-1g.5gb");
  EXPECT_EQ(MixedMigResourceName("1g.10gb+me"), "nvidia.com/mig-1g.10gb.me");
  EXPECT_EQ(MixedMigResourceName("1c.2g.10gb"), "nvidia.com/mig-1c.2g.10gb");
}

TEST(BuildResourcesTest, NoGpusNoResources) {
  auto got = BuildResources(device::Node{}, config::Config{});
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, IsEmpty());
}

TEST(BuildResourcesTest, FullGpuDeviceFields) {
  device::Node node;
  node.gpus = {MakeGpu(0, "GPU-a", 0), MakeGpu(3, "GPU-c", std::nullopt)};
  auto got = BuildResources(node, config::Config{});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  const ResourceSpec& gpus = (*got)[0];
  EXPECT_EQ(gpus.resource_name, "nvidia.com/gpu");
  EXPECT_EQ(gpus.socket_name, "gpulet-gpu.sock");
  pluginapi::Device a;
  a.id = a.visible_id = "GPU-a";
  a.numa_nodes = {0};
  a.gpu_index = 0;
  a.device_nodes = {"/dev/nvidia10"};
  pluginapi::Device c;
  c.id = c.visible_id = "GPU-c";
  c.gpu_index = 3;
  c.device_nodes = {"/dev/nvidia13"};
  EXPECT_THAT(gpus.devices, ElementsAre(a, c));
}

TEST(BuildResourcesTest, MigStrategies) {
  struct Case {
    std::string name;
    config::MigStrategy strategy;
    device::Node node;
    std::vector<std::string> resources;
    std::vector<std::vector<std::string>> ids;
  } cases[] = {
      {"none keeps MIG GPUs whole",
       config::MigStrategy::kNone,
       MixedNode(),
       {"nvidia.com/gpu"},
       {{"GPU-0", "GPU-1"}}},
      {"mixed names each profile",
       config::MigStrategy::kMixed,
       MixedNode(),
       {"nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.20gb"},
       {{"GPU-1"}, {"MIG-a"}, {"MIG-b"}}},
      {"single turns MIG devices into nvidia.com/gpu",
       config::MigStrategy::kSingle,
       UniformMigNode(),
       {"nvidia.com/gpu"},
       {{"MIG-0a", "MIG-0b", "MIG-1a", "MIG-1b"}}},
      {"single without MIG GPUs",
       config::MigStrategy::kSingle,
       FourGpus(),
       {"nvidia.com/gpu"},
       {{"GPU-0", "GPU-1", "GPU-2", "GPU-3"}}},
  };
  for (const Case& c : cases) {
    config::Config config;
    config.flags.mig_strategy = c.strategy;
    auto got = BuildResources(c.node, config);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
    EXPECT_EQ(Names(*got), c.resources) << c.name;
    for (size_t i = 0; i < got->size() && i < c.ids.size(); ++i) {
      EXPECT_EQ(Ids((*got)[i]), c.ids[i]) << c.name;
    }
  }
}

TEST(BuildResourcesTest, MigDeviceFields) {
  config::Config config;
  config.flags.mig_strategy = config::MigStrategy::kMixed;
  ResourceOptions options;
  options.mig_caps_nodes = [](const device::Gpu& gpu,
                              const device::MigDevice& mig) {
    return std::vector<std::string>{
        "/dev/nvidia-caps/nvidia-cap" +
        std::to_string(gpu.index * 100 + mig.gpu_instance_id)};
  };
  auto got = BuildResources(MixedNode(), config, options);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  const pluginapi::Device& mig = (*got)[1].devices.at(0);
  EXPECT_EQ(mig.id, "MIG-a");
  EXPECT_EQ(mig.visible_id, "MIG-a");
  EXPECT_EQ(mig.gpu_index, 0);
  EXPECT_EQ(mig.gpu_instance_id, 7);
  EXPECT_EQ(mig.compute_instance_id, 0);
  EXPECT_EQ(mig.replica, -1);
  EXPECT_EQ(mig.numa_nodes, std::vector<int64_t>{0});
  EXPECT_THAT(mig.device_nodes,
              ElementsAre("/dev/nvidia10", "/dev/nvidia-caps/nvidia-cap7"));
  const pluginapi::Device& gpu = (*got)[0].devices.at(0);
  EXPECT_EQ(gpu.gpu_instance_id, -1);
  EXPECT_EQ(gpu.compute_instance_id, -1);
}

TEST(BuildResourcesTest, IndexStrategyNamesGpusAndMigDevicesByIndex) {
  config::Config config;
  config.flags.mig_strategy = config::MigStrategy::kMixed;
  config.flags.plugin.device_id_strategy = config::DeviceIdStrategy::kIndex;
  auto got = BuildResources(MixedNode(), config);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(Visible((*got)[0]), ElementsAre("1"));
  EXPECT_THAT(Visible((*got)[1]), ElementsAre("0:0"));
  EXPECT_THAT(Visible((*got)[2]), ElementsAre("0:1"));
  // Kubelet IDs stay UUIDs whatever the ID strategy.
  EXPECT_THAT(Ids((*got)[0]), ElementsAre("GPU-1"));
}

TEST(BuildResourcesTest, InvalidMigLayoutsAreErrors) {
  device::Node empty_mig = FourGpus();
  empty_mig.gpus[2].mig_enabled = true;
  device::Node two_profiles = UniformMigNode();
  two_profiles.gpus[1].mig_devices[1] = MakeMig(1, "MIG-x", "3g.20gb", 2);
  device::Node partly = UniformMigNode();
  partly.gpus.push_back(MakeGpu(2, "GPU-2", 0));
  struct Case {
    std::string name;
    config::MigStrategy strategy;
    device::Node node;
    std::string want;
  } cases[] = {
      {"MIG enabled without devices", config::MigStrategy::kMixed, empty_mig,
       "device 2 (GPU-2) has an invalid MIG configuration"},
      {"single with two profiles", config::MigStrategy::kSingle, two_profiles,
       "more than one MIG device type present on node"},
      {"single with full GPUs too", config::MigStrategy::kSingle, partly,
       "all devices on the node must be configured with the same migEnabled "
       "value"},
  };
  for (const Case& c : cases) {
    config::Config config;
    config.flags.mig_strategy = c.strategy;
    auto got = BuildResources(c.node, config);
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want))
        << c.name;
  }
  config::Config mixed;
  mixed.flags.mig_strategy = config::MigStrategy::kMixed;
  EXPECT_TRUE(BuildResources(two_profiles, mixed).ok());
}

TEST(BuildResourcesTest, ResourcePatternsRename) {
  device::Node node = FourGpus();
  node.gpus[2].name = "Tesla T4";
  node.gpus[3].name = "Tesla T4";
  config::Config config;
  config.resources.gpus = {{"*A100*", "nvidia.com/a100"},
                           {"*T4", "nvidia.com/t4"}};
  auto got = BuildResources(node, config);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(Names(*got), ElementsAre("nvidia.com/a100", "nvidia.com/t4"));
  EXPECT_THAT(Ids((*got)[1]), ElementsAre("GPU-2", "GPU-3"));
  EXPECT_EQ((*got)[1].socket_name, "gpulet-t4.sock");

  config.resources.gpus = {{"*A100*", "nvidia.com/a100"}};
  got = BuildResources(node, config);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("GPU 2 name 'Tesla T4' does not match any resource "
                        "patterns"));
}

TEST(BuildResourcesTest, MigPatternsRename) {
  config::Config config;
  config.flags.mig_strategy = config::MigStrategy::kMixed;
  config.resources.mig = {{"1g.*", "nvidia.com/mig-small"},
                          {"*", "nvidia.com/mig-big"}};
  auto got = BuildResources(MixedNode(), config);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(Names(*got), ElementsAre("nvidia.com/gpu", "nvidia.com/mig-big",
                                       "nvidia.com/mig-small"));
  config.resources.mig = {{"1g.*", "nvidia.com/mig-small"}};
  got = BuildResources(MixedNode(), config);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("MIG profile '3g.20gb' of MIG device 0:1"));
}

config::ReplicatedResource Shared(std::string name, int replicas,
                                  config::ReplicaDevices devices = {},
                                  std::string rename = "") {
  config::ReplicatedResource r;
  r.name = std::move(name);
  r.replicas = replicas;
  r.devices = std::move(devices);
  r.rename = std::move(rename);
  return r;
}

TEST(BuildResourcesTest, TimeSlicingReplicas) {
  config::Config config;
  config.sharing.time_slicing = config::ReplicatedResources{};
  config.sharing.time_slicing->resources = {Shared("nvidia.com/gpu", 2)};
  device::Node node = FourGpus();
  node.gpus.resize(2);
  auto got = BuildResources(node, config);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_THAT(Ids((*got)[0]),
              ElementsAre("GPU-0::0", "GPU-0::1", "GPU-1::0", "GPU-1::1"));
  EXPECT_THAT(Visible((*got)[0]),
              ElementsAre("GPU-0", "GPU-0", "GPU-1", "GPU-1"));
  EXPECT_EQ((*got)[0].devices[3].replica, 1);
  EXPECT_EQ((*got)[0].devices[3].gpu_index, 1);

  config.sharing.time_slicing->rename_by_default = true;
  got = BuildResources(node, config);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(Names(*got), ElementsAre("nvidia.com/gpu.shared"));
  EXPECT_EQ((*got)[0].socket_name, "gpulet-gpu.shared.sock");
}

TEST(BuildResourcesTest, SharingSelectsDevicesAndKeepsTheRest) {
  using Kind = config::ReplicaDevices::Kind;
  struct Case {
    std::string name;
    std::vector<config::ReplicatedResource> entries;
    std::vector<std::string> resources;
    std::vector<std::vector<std::string>> ids;
  } cases[] = {
      {"count",
       {Shared("nvidia.com/gpu", 2, {Kind::kCount, 1, {}}, "nvidia.com/ts")},
       {"nvidia.com/gpu", "nvidia.com/ts"},
       {{"GPU-1", "GPU-2", "GPU-3"}, {"GPU-0::0", "GPU-0::1"}}},
      {"list by index and uuid",
       {Shared("nvidia.com/gpu", 2, {Kind::kList, 0, {"3", "GPU-1"}})},
       {"nvidia.com/gpu"},
       {{"GPU-0", "GPU-1::0", "GPU-1::1", "GPU-2", "GPU-3::0", "GPU-3::1"}}},
      {"different replica counts per GPU",
       {Shared("nvidia.com/gpu", 2, {Kind::kList, 0, {"0"}}),
        Shared("nvidia.com/gpu", 3, {Kind::kList, 0, {"1"}})},
       {"nvidia.com/gpu"},
       {{"GPU-0::0", "GPU-0::1", "GPU-1::0", "GPU-1::1", "GPU-1::2", "GPU-2",
         "GPU-3"}}},
      {"absent resource skipped",
       {Shared("nvidia.com/mig-1g.5gb", 2)},
       {"nvidia.com/gpu"},
       {{"GPU-0", "GPU-1", "GPU-2", "GPU-3"}}},
  };
  for (const Case& c : cases) {
    config::Config config;
    config.sharing.time_slicing = config::ReplicatedResources{};
    config.sharing.time_slicing->resources = c.entries;
    auto got = BuildResources(FourGpus(), config);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
    EXPECT_EQ(Names(*got), c.resources) << c.name;
    for (size_t i = 0; i < got->size() && i < c.ids.size(); ++i) {
      EXPECT_EQ(Ids((*got)[i]), c.ids[i]) << c.name;
    }
  }
}

TEST(BuildResourcesTest, SharingErrorsNameTheEntry) {
  using Kind = config::ReplicaDevices::Kind;
  struct Case {
    std::vector<config::ReplicatedResource> entries;
    std::string want;
  } cases[] = {
      {{Shared("nvidia.com/gpu", 2, {Kind::kCount, 5, {}})},
       "sharing.timeSlicing.resources[0].devices: requested 5 devices to be "
       "replicated, but only 4 devices available"},
      {{Shared("nvidia.com/gpu", 2, {Kind::kList, 0, {"7"}})},
       "sharing.timeSlicing.resources[0].devices: no matching device at "
       "index: 7"},
      {{Shared("nvidia.com/gpu", 2,
               {Kind::kList, 0, {"GPU-9f0e1d2c-3b4a-5968-7766-554433221100"}})},
       "no matching device with UUID: GPU-9f0e1d2c"},
      {{Shared("nvidia.com/gpu", 2, {Kind::kList, 0, {"0", "1"}}),
        Shared("nvidia.com/gpu", 4, {Kind::kList, 0, {"1"}})},
       "sharing.timeSlicing.resources[1].devices: device GPU-1 is already "
       "shared by sharing.timeSlicing.resources[0]"},
  };
  for (const Case& c : cases) {
    config::Config config;
    config.sharing.time_slicing = config::ReplicatedResources{};
    config.sharing.time_slicing->resources = c.entries;
    auto got = BuildResources(FourGpus(), config);
    ASSERT_FALSE(got.ok()) << c.want;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want));
  }
}

TEST(BuildResourcesTest, MigDevicesSharedByIndexAndLegacyUuid) {
  using Kind = config::ReplicaDevices::Kind;
  config::Config config;
  config.flags.mig_strategy = config::MigStrategy::kSingle;
  config.sharing.time_slicing = config::ReplicatedResources{};
  config.sharing.time_slicing->resources = {
      Shared("nvidia.com/gpu", 2, {Kind::kList, 0, {"0:1", "MIG-GPU-1/7/0"}})};
  auto got = BuildResources(UniformMigNode(), config);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(Ids((*got)[0]), ElementsAre("MIG-0a", "MIG-0b::0", "MIG-0b::1",
                                          "MIG-1a::0", "MIG-1a::1", "MIG-1b"));
}

// docs/configuration.md's example names GPU 0 for nvidia.com/gpu under MIG
// mixed; when GPU 0 is MIG-enabled the error says so instead of claiming
// there is no device 0.
TEST(BuildResourcesTest, SharingErrorSaysWhyAnIndexDoesNotMatch) {
  using Kind = config::ReplicaDevices::Kind;
  config::Config config;
  config.flags.mig_strategy = config::MigStrategy::kMixed;
  config.sharing.time_slicing = config::ReplicatedResources{};
  config.sharing.time_slicing->resources = {
      Shared("nvidia.com/gpu", 2, {Kind::kList, 0, {"0"}})};
  auto got = BuildResources(MixedNode(), config);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(
      std::string(got.status().message()),
      HasSubstr("no matching device at index: 0 (GPU 0 is "
                "MIG-enabled and advertised as its MIG devices, not "
                "as a device of nvidia.com/gpu: 0:0 in "
                "nvidia.com/mig-1g.5gb, 0:1 in nvidia.com/mig-3g.20gb"));
  config.sharing.time_slicing->resources = {
      Shared("nvidia.com/gpu", 2, {Kind::kList, 0, {"9"}})};
  got = BuildResources(MixedNode(), config);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("no matching device at index: 9 (no GPU or MIG "
                        "device of this node has that index)"));
}

// A GPU that failed discovery is advertised Unhealthy when its UUID is
// known, and left out (not an error for the others) when it is not.
TEST(BuildResourcesTest, FailedGpusAreUnhealthyOrLeftOut) {
  device::Node node = FourGpus();
  node.gpus[1].failure = "GPU is lost";
  node.gpus[2].failure = "GPU is lost";
  node.gpus[2].uuid.clear();
  node.gpus[2].name.clear();
  config::Config config;
  config.sharing.time_slicing = config::ReplicatedResources{};
  config.sharing.time_slicing->resources = {
      Shared("nvidia.com/gpu", 2, {config::ReplicaDevices::Kind::kAll, 0, {}})};
  auto got = BuildResources(node, config);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  std::vector<std::string> unhealthy;
  for (const pluginapi::Device& d : (*got)[0].devices) {
    if (!d.healthy) unhealthy.push_back(d.id);
  }
  EXPECT_EQ((*got)[0].devices.size(), 6u);
  EXPECT_THAT(unhealthy, ElementsAre("GPU-1::0", "GPU-1::1"));
}

}  // namespace
}  // namespace gpulet::resources
