#include "src/sharing/mps_paths.h"

#include "gtest/gtest.h"

namespace gpulet::sharing {
namespace {

TEST(MpsPaths, HostAndContainerDirectories) {
  EXPECT_EQ(MpsHostPipeDir("/run/nvidia/mps", "GPU-a"),
            "/run/nvidia/mps/GPU-a/pipe");
  EXPECT_EQ(MpsHostLogDir("/run/nvidia/mps/", "GPU-a"),
            "/run/nvidia/mps/GPU-a/log");
  EXPECT_EQ(MpsHostShmDir("/run/nvidia/mps//"), "/run/nvidia/mps/shm");
  EXPECT_EQ(MpsHostPipeDir("/", "GPU-a"), "/GPU-a/pipe");
  EXPECT_EQ(MpsContainerPipeDir("GPU-a"), "/mps/GPU-a/pipe");
}

TEST(MpsPaths, PinnedLimitNamesDeviceZero) {
  EXPECT_EQ(MpsPinnedMemLimit(4096), "0=4096M");
}

TEST(MpsPaths, ThreadShareRoundsUp) {
  EXPECT_EQ(MpsActiveThreadPercentage(1, 7), 15);
  EXPECT_EQ(MpsActiveThreadPercentage(2, 4), 50);
  EXPECT_EQ(MpsActiveThreadPercentage(7, 7), 100);
  EXPECT_EQ(MpsActiveThreadPercentage(1, 640), 1);
  EXPECT_EQ(MpsActiveThreadPercentage(0, 7), 1);
  EXPECT_EQ(MpsActiveThreadPercentage(3, 0), 100);
}

}  // namespace
}  // namespace gpulet::sharing
