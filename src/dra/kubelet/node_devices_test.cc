#include "src/dra/kubelet/node_devices.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/dra/testing/test_claims.h"

namespace gpulet::dra {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Names(const std::vector<DeviceHealth>& health) {
  std::vector<std::string> out;
  for (const DeviceHealth& h : health) out.push_back(h.device);
  return out;
}

TEST(NodeDevicesTest, NamesWholeGpusAndMigDevices) {
  EXPECT_THAT(
      NodeDeviceNames(testing_claims::TestNode()),
      ElementsAre("gpu-0", "gpu-1-mig-19-6-1", "gpu-1-mig-9-0-4", "gpu-2"));
}

TEST(NodeDevicesTest, MigDeviceWithoutPlacementHasNoName) {
  device::MigDevice mig;
  EXPECT_EQ(MigDraName(mig), "");
}

TEST(NodeDevicesTest, EventsCoverTheirDevices) {
  device::Node node = testing_claims::TestNode();
  node.gpus[1].mig_devices[0].gpu_instance_id = 3;
  node.gpus[1].mig_devices[1].gpu_instance_id = 5;
  auto whole = HealthOfEvent(node, 1, std::nullopt, false, "Xid 79", 7);
  EXPECT_THAT(Names(whole),
              ElementsAre("gpu-1", "gpu-1-mig-19-6-1", "gpu-1-mig-9-0-4"));
  EXPECT_EQ(whole[0].message, "Xid 79");
  EXPECT_EQ(whole[0].updated_unix, 7);
  EXPECT_FALSE(whole[0].healthy);
  EXPECT_THAT(Names(HealthOfEvent(node, 1, 5u, false, "Xid 43", 0)),
              ElementsAre("gpu-1-mig-9-0-4"));
  auto back = HealthOfEvent(node, 0, std::nullopt, true, "Xid 79", 0);
  EXPECT_THAT(Names(back), ElementsAre("gpu-0"));
  EXPECT_EQ(back[0].message, "");
  EXPECT_TRUE(HealthOfEvent(node, 9, std::nullopt, false, "", 0).empty());
}

TEST(NodeDevicesTest, UnhealthyDevicesCarryTheFault) {
  const device::Node node = testing_claims::TestNode();
  auto lost = HealthOfEvent(node, 0, std::nullopt, false, "Xid 79", 0,
                            {.xid = 79, .lost = true});
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].fault, (DeviceFault{.xid = 79, .lost = true}));
  // A recovery clears it, whatever the caller passed.
  auto back = HealthOfEvent(node, 0, std::nullopt, true, "", 0,
                            {.xid = 79, .lost = true});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].fault, DeviceFault{});
}

}  // namespace
}  // namespace gpulet::dra
