#include "src/dra/kubelet/device_names.h"

#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::dra {
namespace {

using ::testing::HasSubstr;

TEST(DeviceNamesTest, GpuName) {
  EXPECT_EQ(GpuDeviceName(0), "gpu-0");
  EXPECT_EQ(GpuDeviceName(15), "gpu-15");
}

TEST(DeviceNamesTest, MigName) {
  EXPECT_EQ(MigDeviceName(0, 19, 6, 1), "gpu-0-mig-19-6-1");
  EXPECT_EQ(MigDeviceName(7, 0, 0, 8), "gpu-7-mig-0-0-8");
}

TEST(DeviceNamesTest, ParsesGpu) {
  absl::StatusOr<DeviceRef> ref = ParseDeviceName("gpu-3");
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(*ref, (DeviceRef{.gpu_index = 3}));
}

TEST(DeviceNamesTest, ParsesMig) {
  absl::StatusOr<DeviceRef> ref = ParseDeviceName("gpu-1-mig-14-4-2");
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(*ref, (DeviceRef{.gpu_index = 1,
                             .mig = true,
                             .profile_id = 14,
                             .placement_start = 4,
                             .placement_size = 2}));
}

TEST(DeviceNamesTest, RejectsOtherNamesNamingThem) {
  for (const char* bad :
       {"", "gpu", "gpu-", "gpu-a", "gpu--1", "gpu-01", "gpu-+1", "GPU-0",
        "gpu-0-", "gpu-0-mig", "gpu-0-mig-1-2", "gpu-0-mag-1-2-3",
        "gpu-0-mig-1-2-0", "gpu-0-mig-1-2-3-4", "gpu-99999999999",
        "mig-0-1-2-3", "gpu-0 "}) {
    absl::StatusOr<DeviceRef> ref = ParseDeviceName(bad);
    EXPECT_EQ(ref.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(ref.status().message(),
                HasSubstr(std::string("\"") + bad + "\""));
  }
}

// Property: every name round-trips and is a DNS label of <= 63 characters.
TEST(DeviceNamesTest, RoundTripsAndFitsADnsLabel) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> any(0, std::numeric_limits<int>::max());
  for (int i = 0; i < 2000; ++i) {
    DeviceRef want{.gpu_index = any(rng) % (i % 2 ? 16 : 1 << 30)};
    std::string name = GpuDeviceName(want.gpu_index);
    if (i % 3 != 0) {
      want.mig = true;
      want.profile_id = any(rng);
      want.placement_start = any(rng);
      want.placement_size = 1 + any(rng) % 1000;
      name = MigDeviceName(want.gpu_index, want.profile_id,
                           want.placement_start, want.placement_size);
    }
    EXPECT_LE(name.size(), 63u) << name;
    EXPECT_THAT(name, ::testing::MatchesRegex("[a-z0-9]([-a-z0-9]*[a-z0-9])?"));
    absl::StatusOr<DeviceRef> got = ParseDeviceName(name);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want) << name;
  }
}

}  // namespace
}  // namespace gpulet::dra
