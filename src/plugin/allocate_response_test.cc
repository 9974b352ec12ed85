#include "src/plugin/allocate_response.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpulet::plugin {
namespace {

using ::testing::HasSubstr;

DeviceSnapshot Snapshot() {
  DeviceSnapshot s;
  s.version = 1;
  s.devices = {{"GPU-a::0", true, {0}, "GPU-a", 0},
               {"GPU-a::1", true, {0}, "GPU-a", 0},
               {"GPU-b", true, {0}, "GPU-b", 1},
               {"MIG-c", false, {1}, "MIG-c", 2},
               {"3", true, {}, "", 3}};
  return s;
}

struct EnvvarCase {
  std::string name;
  std::vector<std::string> ids;
  std::string want;
};

class EnvvarResponseTest : public ::testing::TestWithParam<EnvvarCase> {};

TEST_P(EnvvarResponseTest, SetsVisibleDevices) {
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r =
      EnvvarResponse(Snapshot(), GetParam().ids);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs_size(), 1);
  EXPECT_EQ(r->envs().at(kVisibleDevicesEnv), GetParam().want);
  EXPECT_EQ(r->mounts_size(), 0);
  EXPECT_EQ(r->devices_size(), 0);
  EXPECT_EQ(r->annotations_size(), 0);
  EXPECT_EQ(r->cdi_devices_size(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Table, EnvvarResponseTest,
    ::testing::Values(
        EnvvarCase{"one", {"GPU-b"}, "GPU-b"},
        EnvvarCase{"request_order_kept", {"MIG-c", "GPU-b"}, "MIG-c,GPU-b"},
        EnvvarCase{"replicas_name_their_gpu_once",
                   {"GPU-a::1", "GPU-b", "GPU-a::0"},
                   "GPU-a,GPU-b"},
        EnvvarCase{"duplicate_id_once", {"GPU-b", "GPU-b"}, "GPU-b"},
        EnvvarCase{"no_visible_id_uses_the_id", {"3", "GPU-a::0"}, "3,GPU-a"},
        EnvvarCase{"unhealthy_still_named", {"MIG-c"}, "MIG-c"},
        EnvvarCase{"empty_request", {}, ""}),
    [](const auto& test_info) { return test_info.param.name; });

TEST(EnvvarResponseErrorTest, UnknownIdIsInvalidArgumentNamingIt) {
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r =
      EnvvarResponse(Snapshot(), {"GPU-b", "GPU-nope"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("unknown device: GPU-nope"));
}

}  // namespace
}  // namespace gpulet::plugin
