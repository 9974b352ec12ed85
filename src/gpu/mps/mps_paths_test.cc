#include "src/gpu/mps/mps_paths.h"

#include "gtest/gtest.h"

namespace gpulet::sharing {
namespace {

TEST(MpsPaths, HostAndContainerDirectories) {
  EXPECT_EQ(MpsHostPipeDir("/run/nvidia/mps", "GPU-a"),
            "/run/nvidia/mps/GPU-a/pipe");
  EXPECT_EQ(MpsHostLogDir("/run/nvidia/mps/", "GPU-a"),
            "/run/nvidia/mps/GPU-a/log");
  EXPECT_EQ(MpsHostShmDir("/run/nvidia/mps//", "GPU-a"),
            "/run/nvidia/mps/GPU-a/shm");
  EXPECT_EQ(MpsHostDir("/run/nvidia/mps", "claim-1"),
            "/run/nvidia/mps/claim-1");
  EXPECT_EQ(MpsHostPipeDir("/", "GPU-a"), "/GPU-a/pipe");
  EXPECT_EQ(MpsContainerPipeDir("GPU-a"), "/mps/GPU-a/pipe");
}

TEST(MpsPaths, EveryDaemonHasItsOwnShm) {
  EXPECT_NE(MpsHostShmDir("/r", "GPU-a"), MpsHostShmDir("/r", "GPU-b"));
  EXPECT_NE(MpsHostShmDir("/r", "claim-1"), MpsHostShmDir("/r", "claim-2"));
}

TEST(MpsPaths, KeysStayOneComponent) {
  EXPECT_TRUE(CheckMpsKey("GPU-b1028956-cfa2-0990-bf4a-5da9abb51763").ok());
  EXPECT_TRUE(CheckMpsKey("claim-0c4b1f9e-1d2e-4a5b-8c9d-0e1f2a3b4c5d").ok());
  for (const char* bad : {"", "..", ".", "a/b", "../etc", "a b", "x\n"}) {
    absl::Status s = CheckMpsKey(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(CheckMpsKey(std::string(129, 'a')).ok());
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
