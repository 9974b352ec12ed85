#include "src/daemon/resources.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::daemon {
namespace {

using ::testing::IsEmpty;

device::Gpu MakeGpu(unsigned index, std::string uuid, std::optional<int> numa) {
  device::Gpu gpu;
  gpu.index = index;
  gpu.uuid = std::move(uuid);
  gpu.numa_node = numa;
  return gpu;
}

plugin::Device MakeDevice(std::string uuid, std::vector<int64_t> numa,
                          int index) {
  plugin::Device d;
  d.id = uuid;
  d.visible_id = uuid;
  d.numa_nodes = std::move(numa);
  d.gpu_index = index;
  return d;
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

TEST(BuildResourcesTest, NoGpusNoResources) {
  EXPECT_THAT(BuildResources(device::Node{}, "gpulet"), IsEmpty());
}

TEST(BuildResourcesTest, OneDevicePerFullGpu) {
  struct Case {
    std::string name;
    std::vector<device::Gpu> gpus;
    std::vector<plugin::Device> want;
  } cases[] = {
      {"numa known",
       {MakeGpu(0, "GPU-a", 0), MakeGpu(1, "GPU-b", 1)},
       {MakeDevice("GPU-a", {0}, 0), MakeDevice("GPU-b", {1}, 1)}},
      {"numa unknown",
       {MakeGpu(3, "GPU-c", std::nullopt)},
       {MakeDevice("GPU-c", {}, 3)}},
  };
  for (const Case& c : cases) {
    device::Node node;
    node.gpus = c.gpus;
    std::vector<ResourceSpec> got = BuildResources(node, "gpulet");
    ASSERT_EQ(got.size(), 1u) << c.name;
    EXPECT_EQ(got[0].resource_name, "nvidia.com/gpu") << c.name;
    EXPECT_EQ(got[0].socket_name, "gpulet-gpu.sock") << c.name;
    EXPECT_EQ(got[0].devices, c.want) << c.name;
  }
}

TEST(BuildResourcesTest, MigDevicesAreNotAdvertisedYet) {
  device::Node node;
  device::Gpu gpu = MakeGpu(0, "GPU-a", 0);
  gpu.mig_enabled = true;
  device::MigDevice mig;
  mig.uuid = "MIG-x";
  gpu.mig_devices.push_back(mig);
  node.gpus = {gpu};
  std::vector<ResourceSpec> got = BuildResources(node, "gpulet");
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].devices.size(), 1u);
  EXPECT_EQ(got[0].devices[0].id, "GPU-a");
}

}  // namespace
}  // namespace gpulet::daemon
