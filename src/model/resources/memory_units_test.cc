#include "src/model/resources/memory_units.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/resources/resources.h"

namespace gpulet::resources {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

device::Node Node(std::vector<uint64_t> gib) {
  device::Node node;
  for (size_t i = 0; i < gib.size(); ++i) {
    device::Gpu g;
    g.index = static_cast<unsigned>(i);
    g.uuid = "GPU-" + std::to_string(i);
    g.name = "NVIDIA T4";
    g.minor = static_cast<unsigned>(i);
    g.memory_total_bytes = gib[i] << 30;
    node.gpus.push_back(g);
  }
  return node;
}

config::Config WithMemory(config::MemoryShares m) {
  config::Config c;
  c.sharing.memory = std::move(m);
  return c;
}

std::vector<std::string> Ids(const ResourceSpec& spec) {
  std::vector<std::string> ids;
  for (const pluginapi::Device& d : spec.devices) ids.push_back(d.id);
  return ids;
}

TEST(MemoryShares, SelectedGpusBecomeUnitsOnly) {
  config::MemoryShares m;
  m.devices.kind = config::ReplicaDevices::Kind::kList;
  m.devices.list = {"1"};
  m.unit_mib = 4096;
  auto specs = BuildResources(Node({16, 16}), WithMemory(m));
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].resource_name, "nvidia.com/gpu");
  EXPECT_THAT(Ids((*specs)[0]), ElementsAre("GPU-0"));
  EXPECT_EQ((*specs)[1].resource_name, "nvidia.com/gpu-memory");
  EXPECT_THAT(Ids((*specs)[1]),
              ElementsAre("GPU-1::m0", "GPU-1::m1", "GPU-1::m2", "GPU-1::m3"));
  EXPECT_EQ((*specs)[1].devices[2].visible_id, "GPU-1");
  EXPECT_EQ((*specs)[1].devices[2].gpu_index, 1);
  EXPECT_EQ((*specs)[1].socket_name, "gpulet-gpu-memory.sock");
}

TEST(MemoryShares, AllGpusLeaveNoWholeGpuResource) {
  auto specs = BuildResources(Node({2, 3}), WithMemory({}));
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_THAT(Ids((*specs)[0]),
              ElementsAre("GPU-0::m0", "GPU-0::m1", "GPU-1::m0", "GPU-1::m1",
                          "GPU-1::m2"));
}

TEST(MemoryShares, TimeSlicingSharesTheRest) {
  config::Config c = WithMemory({});
  c.sharing.memory->devices.kind = config::ReplicaDevices::Kind::kCount;
  c.sharing.memory->devices.count = 1;
  config::ReplicatedResources ts;
  config::ReplicatedResource gpu;
  gpu.name = "nvidia.com/gpu";
  gpu.replicas = 2;
  ts.resources.push_back(gpu);
  c.sharing.time_slicing = ts;
  auto specs = BuildResources(Node({1, 1}), c);
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_THAT(Ids((*specs)[0]), ElementsAre("GPU-1::0", "GPU-1::1"));
  EXPECT_THAT(Ids((*specs)[1]), ElementsAre("GPU-0::m0"));
}

TEST(MemoryShares, TooManyUnitsNameTheField) {
  config::MemoryShares m;
  m.unit_mib = 1;
  m.max_devices_per_node = 4096;
  auto specs = BuildResources(Node({16}), WithMemory(m));
  ASSERT_FALSE(specs.ok());
  EXPECT_EQ(specs.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(specs.status().message(),
              HasSubstr("sharing.memory.maxDevicesPerNode: the selected GPUs "
                        "make 16384 memory units (1 MiB each), more than "
                        "maxDevicesPerNode (4096)"));
}

TEST(MemoryShares, UnknownGpuAndTakenNameAreRefused) {
  config::MemoryShares m;
  m.devices.kind = config::ReplicaDevices::Kind::kList;
  m.devices.list = {"5"};
  auto specs = BuildResources(Node({16}), WithMemory(m));
  ASSERT_FALSE(specs.ok());
  EXPECT_THAT(specs.status().message(),
              HasSubstr("sharing.memory.devices: no GPU advertised whole has "
                        "index 5"));

  config::MemoryShares taken;
  taken.resource_name = "nvidia.com/gpu";
  taken.devices.kind = config::ReplicaDevices::Kind::kCount;
  taken.devices.count = 1;
  specs = BuildResources(Node({16, 16}), WithMemory(taken));
  ASSERT_FALSE(specs.ok());
  EXPECT_THAT(specs.status().message(),
              HasSubstr("sharing.memory.resourceName: nvidia.com/gpu is "
                        "already advertised"));
}

}  // namespace
}  // namespace gpulet::resources
