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

}  // namespace
}  // namespace gpulet::sharing
