#include "src/model/resources/device_map.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::resources {
namespace {

TEST(ReplicaIdTest, AnnotatesWithDoubleColon) {
  EXPECT_EQ(ReplicaId("GPU-a", 0), "GPU-a::0");
  EXPECT_EQ(ReplicaId("MIG-b", 12), "MIG-b::12");
}

TEST(ApplyReplicasTest, NoEntriesLeavesDevices) {
  DeviceMap map;
  MappedDevice d;
  d.device.id = d.uuid = "GPU-a";
  d.index = "0";
  map["nvidia.com/gpu"].push_back(d);
  auto got = ApplyReplicas(config::ReplicatedResources{}, "sharing.mps", map);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->at("nvidia.com/gpu").at(0).device.id, "GPU-a");
}

}  // namespace
}  // namespace gpulet::resources
