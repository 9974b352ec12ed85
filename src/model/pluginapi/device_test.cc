#include "src/model/pluginapi/device.h"

#include <string>

#include "gtest/gtest.h"

namespace gpulet::pluginapi {
namespace {

TEST(DeviceSnapshotTest, FindWorksWithAndWithoutTheIndex) {
  DeviceSnapshot indexed;
  for (int i = 0; i < 4; ++i) {
    indexed.devices.emplace_back().id = "GPU-" + std::to_string(i);
  }
  indexed.BuildIndex();
  ASSERT_NE(indexed.index, nullptr);
  EXPECT_EQ(indexed.Find("GPU-3"), &indexed.devices[3]);
  EXPECT_EQ(indexed.Find("GPU-4"), nullptr);
  DeviceSnapshot scanned;
  scanned.devices = indexed.devices;
  EXPECT_EQ(scanned.index, nullptr);
  EXPECT_EQ(scanned.Find("GPU-1"), &scanned.devices[1]);
  EXPECT_EQ(scanned.Find("GPU-4"), nullptr);
}

}  // namespace
}  // namespace gpulet::pluginapi
