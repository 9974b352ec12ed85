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
  EXPECT_EQ(MpsReplicaKey("GPU-a::3"), "GPU-a");
  EXPECT_EQ(MpsReplicaKey("MIG-b::0"), "MIG-b");
  EXPECT_EQ(MpsReplicaKey("GPU-a"), "");
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

TEST(MpsPaths, DaemonDefaultsAreControlCommands) {
  EXPECT_EQ(MpsSetDefaultActiveThreadPercentage(50),
            "set_default_active_thread_percentage 50");
  EXPECT_EQ(MpsSetDefaultPinnedMemLimit("GPU-1", 10240),
            "set_default_device_pinned_mem_limit GPU-1 10240M");
}

TEST(MpsPaths, ThreadShareRoundsUp) {
  EXPECT_EQ(MpsActiveThreadPercentage(1, 7), 15);
  EXPECT_EQ(MpsActiveThreadPercentage(2, 4), 50);
  EXPECT_EQ(MpsActiveThreadPercentage(7, 7), 100);
  EXPECT_EQ(MpsActiveThreadPercentage(1, 640), 1);
  EXPECT_EQ(MpsActiveThreadPercentage(0, 7), 1);
  EXPECT_EQ(MpsActiveThreadPercentage(3, 0), 100);
}

// NVIDIA's mps-control-daemon: memory / replicas / 1024 / 1024 and
// 100 / replicas, each an integer division.
TEST(MpsPaths, ReplicaLimitsRoundAsNvidiaDoes) {
  const uint64_t t4 = 15360ULL * 1024 * 1024;  // 15360 MiB
  EXPECT_EQ(MpsReplicaPinnedMemMib(t4, 2), 7680);
  EXPECT_EQ(MpsReplicaPinnedMemMib(t4, 7), 2194);  // 2194.28...
  EXPECT_EQ(MpsReplicaPinnedMemMib(80ULL * 1024 * 1024 * 1024 + 1, 3), 27306);
  EXPECT_EQ(MpsReplicaPinnedMemMib(0, 2), 0);
  EXPECT_EQ(MpsReplicaThreadPercentage(2), 50);
  EXPECT_EQ(MpsReplicaThreadPercentage(3), 33);
  EXPECT_EQ(MpsReplicaThreadPercentage(4), 25);
  EXPECT_EQ(MpsReplicaThreadPercentage(48), 2);
  EXPECT_EQ(MpsReplicaThreadPercentage(0), 100);
  EXPECT_EQ(
      MpsReplicaLimitCommands(t4, 4),
      (std::vector<std::string>{"set_default_device_pinned_mem_limit 0 3840M",
                                "set_default_active_thread_percentage 25"}));
  EXPECT_EQ(
      MpsReplicaLimitCommands(0, 4),
      (std::vector<std::string>{"set_default_active_thread_percentage 25"}));
}

}  // namespace
}  // namespace gpulet::sharing
