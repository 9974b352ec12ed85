#include "src/plugin/server/request_handlers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/model/allocation/allocate_response.h"
#include "src/model/allocation/simple_preferred.h"

namespace gpulet::plugin {
namespace {

using allocation::AllocateOptions;
using allocation::EnvvarResponse;
using allocation::kVisibleDevicesEnv;
using allocation::MakeAllocateHandler;
using allocation::SimplePreferred;
using pluginapi::AllocateHandler;
using pluginapi::Device;
using pluginapi::DeviceSnapshot;
using pluginapi::PreferredHandler;
using ::testing::ElementsAre;

constexpr char kResource[] = "nvidia.com/gpu";

Device Gpu(const std::string& id, bool healthy, std::vector<int64_t> numa,
           int index) {
  Device d;
  d.id = id;
  d.healthy = healthy;
  d.numa_nodes = std::move(numa);
  d.visible_id = id;
  d.gpu_index = index;
  return d;
}

DeviceSnapshot Snapshot() {
  DeviceSnapshot s;
  s.version = 4;
  s.devices = {Gpu("GPU-a", true, {0}, 0), Gpu("GPU-b", false, {1}, 1),
               Gpu("GPU-c", true, {}, 2)};
  return s;
}

v1beta1::AllocateRequest AllocateOf(
    std::vector<std::vector<std::string>> containers) {
  v1beta1::AllocateRequest request;
  for (const auto& ids : containers) {
    auto* c = request.add_container_requests();
    for (const auto& id : ids) c->add_devices_ids(id);
  }
  return request;
}

v1beta1::PreferredAllocationRequest PreferredOf(
    std::vector<std::string> available, std::vector<std::string> must,
    int size) {
  v1beta1::PreferredAllocationRequest request;
  auto* c = request.add_container_requests();
  for (const auto& id : available) c->add_available_deviceids(id);
  for (const auto& id : must) c->add_must_include_deviceids(id);
  c->set_allocation_size(size);
  return request;
}

TEST(HandleAllocateTest, OneResponsePerContainerInOrder) {
  v1beta1::AllocateResponse response;
  absl::Status s = HandleAllocate(kResource, Snapshot(),
                                  AllocateOf({{"GPU-c", "GPU-a"}, {"GPU-b"}}),
                                  EnvvarResponse, &response);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(response.container_responses_size(), 2);
  EXPECT_EQ(response.container_responses(0).envs().at(kVisibleDevicesEnv),
            "GPU-c,GPU-a");
  EXPECT_EQ(response.container_responses(1).envs().at(kVisibleDevicesEnv),
            "GPU-b");
}

// NVIDIA's plugin v0.20 answers this request with exactly this text and the
// code UNKNOWN (a plain Go error). gpulet keeps NVIDIA's text and answers
// INVALID_ARGUMENT on purpose (docs/migration.md lists the difference).
TEST(HandleAllocateTest, UnknownIdIsInvalidArgumentNamingIt) {
  v1beta1::AllocateResponse response;
  int calls = 0;
  AllocateHandler counting = [&calls](const DeviceSnapshot& s,
                                      const std::vector<std::string>& ids) {
    ++calls;
    return EnvvarResponse(s, ids);
  };
  absl::Status s =
      HandleAllocate(kResource, Snapshot(), AllocateOf({{"GPU-a", "GPU-zz"}}),
                     counting, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "invalid allocation request for \"nvidia.com/gpu\": invalid "
            "request: unknown device: GPU-zz");
  EXPECT_EQ(calls, 0);
}

TEST(HandleAllocateTest, EmptyContainerRequestIsInvalidArgument) {
  v1beta1::AllocateResponse response;
  absl::Status s =
      HandleAllocate(kResource, Snapshot(), AllocateOf({{"GPU-a"}, {}}),
                     EnvvarResponse, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("no device IDs"));
}

TEST(HandleAllocateTest, NoContainersIsAnEmptyAnswer) {
  v1beta1::AllocateResponse response;
  response.add_container_responses();
  absl::Status s = HandleAllocate(kResource, Snapshot(), AllocateOf({}),
                                  EnvvarResponse, &response);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(response.container_responses_size(), 0);
}

TEST(HandleAllocateTest, HandlerErrorKeepsItsCodeWithThePrefix) {
  AllocateHandler refuse = [](const DeviceSnapshot&,
                              const std::vector<std::string>& ids)
      -> absl::StatusOr<v1beta1::ContainerAllocateResponse> {
    if (ids.size() > 1) {
      return absl::InvalidArgumentError(
          "invalid request: maximum request size for shared resources is 1; "
          "found 2");
    }
    return absl::ResourceExhaustedError("out of shares");
  };
  v1beta1::AllocateResponse response;
  absl::Status s =
      HandleAllocate(kResource, Snapshot(), AllocateOf({{"GPU-a", "GPU-c"}}),
                     refuse, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "invalid allocation request for \"nvidia.com/gpu\": invalid "
            "request: maximum request size for shared resources is 1; found 2");
  s = HandleAllocate(kResource, Snapshot(), AllocateOf({{"GPU-a"}}), refuse,
                     &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
}

TEST(HandleAllocateTest, SharedLimitReachesTheKubeletInNvidiasWords) {
  DeviceSnapshot snapshot = Snapshot();
  for (int r = 0; r < 2; ++r) {
    Device replica = Gpu("GPU-s::" + std::to_string(r), true, {0}, 3);
    replica.visible_id = "GPU-s";
    replica.replica = r;
    snapshot.devices.push_back(replica);
  }
  AllocateOptions options;
  options.fail_requests_greater_than_one = true;
  absl::StatusOr<AllocateHandler> handler = MakeAllocateHandler(options);
  ASSERT_TRUE(handler.ok()) << handler.status();
  v1beta1::AllocateResponse response;
  absl::Status s = HandleAllocate(kResource, snapshot,
                                  AllocateOf({{"GPU-s::0", "GPU-s::1"}}),
                                  *handler, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "invalid allocation request for \"nvidia.com/gpu\": invalid "
            "request: maximum request size for shared resources is 1; found 2");
  s = HandleAllocate(kResource, snapshot, AllocateOf({{"GPU-s::1"}, {"GPU-a"}}),
                     *handler, &response);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(response.container_responses(0).envs().at(kVisibleDevicesEnv),
            "GPU-s");
}

TEST(HandlePreferredTest, AnswersEachContainer) {
  v1beta1::PreferredAllocationRequest request =
      PreferredOf({"GPU-c", "GPU-a"}, {}, 1);
  *request.add_container_requests() =
      PreferredOf({"GPU-a", "GPU-b", "GPU-c"}, {"GPU-c"}, 2)
          .container_requests(0);
  v1beta1::PreferredAllocationResponse response;
  absl::Status s = HandlePreferred(kResource, Snapshot(), request,
                                   SimplePreferred, &response);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(response.container_responses_size(), 2);
  EXPECT_THAT(response.container_responses(0).deviceids(),
              ElementsAre("GPU-a"));
  EXPECT_THAT(response.container_responses(1).deviceids(),
              ElementsAre("GPU-c", "GPU-a"));
}

TEST(HandlePreferredTest, InvalidRequestNamesTheId) {
  v1beta1::PreferredAllocationResponse response;
  absl::Status s = HandlePreferred(kResource, Snapshot(),
                                   PreferredOf({"GPU-a", "GPU-q"}, {}, 1),
                                   SimplePreferred, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "invalid preferred allocation request for \"nvidia.com/gpu\": "
            "unknown device: GPU-q");
}

TEST(HandlePreferredTest, HandlerSeesDeduplicatedRequest) {
  std::vector<std::string> seen_available, seen_must;
  PreferredHandler spy = [&](const DeviceSnapshot&,
                             const std::vector<std::string>& available,
                             const std::vector<std::string>& must, int size) {
    seen_available = available;
    seen_must = must;
    return absl::StatusOr<std::vector<std::string>>(
        std::vector<std::string>(available.begin(), available.begin() + size));
  };
  v1beta1::PreferredAllocationResponse response;
  absl::Status s = HandlePreferred(
      kResource, Snapshot(),
      PreferredOf({"GPU-a", "GPU-a", "GPU-b"}, {"GPU-a", "GPU-a"}, 2), spy,
      &response);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_THAT(seen_available, ElementsAre("GPU-a", "GPU-b"));
  EXPECT_THAT(seen_must, ElementsAre("GPU-a"));
}

struct BadPolicyCase {
  std::string name;
  std::vector<std::string> answer;
  std::string want;
};

class BadPolicyTest : public ::testing::TestWithParam<BadPolicyCase> {};

TEST_P(BadPolicyTest, WrongAnswerIsInternal) {
  std::vector<std::string> answer = GetParam().answer;
  PreferredHandler policy = [answer](const DeviceSnapshot&,
                                     const std::vector<std::string>&,
                                     const std::vector<std::string>&, int) {
    return absl::StatusOr<std::vector<std::string>>(answer);
  };
  v1beta1::PreferredAllocationResponse response;
  absl::Status s =
      HandlePreferred(kResource, Snapshot(),
                      PreferredOf({"GPU-a", "GPU-b", "GPU-c"}, {"GPU-b"}, 2),
                      policy, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), ::testing::HasSubstr(GetParam().want));
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadPolicyTest,
    ::testing::Values(
        BadPolicyCase{"too_few", {"GPU-b"}, "chose 1 devices, not 2"},
        BadPolicyCase{"twice", {"GPU-b", "GPU-b"}, "chose GPU-b twice"},
        BadPolicyCase{
            "unavailable", {"GPU-b", "GPU-zz"}, "unavailable device GPU-zz"},
        BadPolicyCase{"dropped_must",
                      {"GPU-a", "GPU-c"},
                      "left out must-include device GPU-b"}),
    [](const auto& test_info) { return test_info.param.name; });

TEST(ToListAndWatchResponseTest, FullListWithHealthAndNuma) {
  v1beta1::ListAndWatchResponse r = ToListAndWatchResponse(Snapshot());
  ASSERT_EQ(r.devices_size(), 3);
  EXPECT_EQ(r.devices(0).id(), "GPU-a");
  EXPECT_EQ(r.devices(0).health(), "Healthy");
  ASSERT_EQ(r.devices(0).topology().nodes_size(), 1);
  EXPECT_EQ(r.devices(0).topology().nodes(0).id(), 0);
  EXPECT_EQ(r.devices(1).health(), "Unhealthy");
  EXPECT_EQ(r.devices(1).topology().nodes(0).id(), 1);
  EXPECT_FALSE(r.devices(2).has_topology());
}

}  // namespace
}  // namespace gpulet::plugin
