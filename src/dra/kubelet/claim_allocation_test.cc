#include "src/dra/kubelet/claim_allocation.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

const ClaimRef kRef{.namespace_name = "ns", .name = "c", .uid = "u1"};

json Claim(json results, json config = json::array()) {
  return {{"metadata", {{"name", "c"}, {"namespace", "ns"}, {"uid", "u1"}}},
          {"status",
           {{"allocation",
             {{"devices", {{"results", results}, {"config", config}}}}}}}};
}

json Result(const std::string& request, const std::string& device,
            const std::string& driver = "gpu.nvidia.com",
            const std::string& pool = "node-a") {
  return {{"request", request},
          {"driver", driver},
          {"pool", pool},
          {"device", device}};
}

TEST(ReadAllocationTest, TakesOurDevicesInOurPoolOnly) {
  json claim = Claim({Result("a", "gpu-0"), Result("a", "gpu-1", "other.io"),
                      Result("b", "gpu-2", "gpu.nvidia.com", "node-b"),
                      Result("b", "gpu-3")});
  absl::StatusOr<ClaimAllocation> got =
      ReadAllocation(claim, kRef, "gpu.nvidia.com", "node-a");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->devices.size(), 2u);
  EXPECT_EQ(got->devices[0].device, "gpu-0");
  EXPECT_EQ(got->devices[0].requests, std::vector<std::string>{"a"});
  EXPECT_EQ(got->devices[1].device, "gpu-3");
  EXPECT_EQ(got->devices[1].pool, "node-a");
}

TEST(ReadAllocationTest, MergesRequestsOfOneDeviceAndKeepsShares) {
  json shared = Result("b", "gpu-0");
  shared["shareID"] = "s1";
  shared["adminAccess"] = true;
  json claim = Claim({Result("a", "gpu-0"), Result("c", "gpu-0"), shared});
  absl::StatusOr<ClaimAllocation> got =
      ReadAllocation(claim, kRef, "gpu.nvidia.com", "node-a");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->devices.size(), 2u);
  EXPECT_EQ(got->devices[0].requests, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(got->devices[1].share_id, "s1");
  EXPECT_TRUE(got->devices[1].admin_access);
}

TEST(ReadAllocationTest, ReadsTheMemoryEachShareConsumes) {
  json first = Result("a", "gpu-0");
  first["shareID"] = "7c1c6e7e-1b2c-4d5e-9f00-000000000001";
  first["consumedCapacity"] = {{"memory", "4Gi"}};
  json second = Result("b", "gpu-0");
  second["shareID"] = "7c1c6e7e-1b2c-4d5e-9f00-000000000002";
  second["consumedCapacity"] = {{"memory", "2147483648"}};
  absl::StatusOr<ClaimAllocation> got =
      ReadAllocation(Claim({first, second, Result("c", "gpu-1")}), kRef,
                     "gpu.nvidia.com", "node-a");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->devices.size(), 3u);
  EXPECT_EQ(got->devices[0].consumed_memory, int64_t{4} << 30);
  EXPECT_EQ(got->devices[1].consumed_memory, int64_t{2} << 30);
  EXPECT_EQ(got->devices[1].share_id, second["shareID"]);
  EXPECT_EQ(got->devices[2].consumed_memory, std::nullopt);

  json bad = Result("a", "gpu-0");
  bad["consumedCapacity"] = {{"memory", "lots"}};
  EXPECT_THAT(
      ReadAllocation(Claim({bad}), kRef, "gpu.nvidia.com", "node-a")
          .status()
          .message(),
      HasSubstr("results[0].consumedCapacity.memory: quantity \"lots\""));
}

TEST(ReadAllocationTest, KeepsOurOpaqueConfigsInOrder) {
  json config = {
      {{"source", "FromClass"},
       {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", {{"k", 1}}}}}},
      {{"source", "FromClaim"},
       {"opaque", {{"driver", "other.io"}, {"parameters", {{"k", 2}}}}}},
      {{"source", "FromClaim"},
       {"requests", {"a"}},
       {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", {{"k", 3}}}}}}};
  absl::StatusOr<ClaimAllocation> got = ReadAllocation(
      Claim({Result("a", "gpu-0")}, config), kRef, "gpu.nvidia.com", "node-a");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->configs.size(), 2u);
  EXPECT_TRUE(got->configs[0].from_class);
  EXPECT_EQ(got->configs[0].parameters, (json{{"k", 1}}));
  EXPECT_EQ(got->configs[1].requests, std::vector<std::string>{"a"});
  EXPECT_FALSE(got->configs[1].from_class);
}

TEST(ReadAllocationTest, ErrorsNameTheClaimAndTheField) {
  struct Case {
    const char* name;
    json claim;
    const char* want;
  };
  json wrong_uid = Claim({Result("a", "gpu-0")});
  wrong_uid["metadata"]["uid"] = "u2";
  json unallocated = Claim({});
  unallocated["status"] = json::object();
  json no_device = Claim(
      {{{"request", "a"}, {"driver", "gpu.nvidia.com"}, {"pool", "node-a"}}});
  json bad_type = Claim({Result("a", "gpu-0")});
  bad_type["status"]["allocation"]["devices"]["results"][0]["device"] = 7;
  json bad_results = Claim(json::object());
  const Case cases[] = {
      {"uid", wrong_uid, "claim ns/c: metadata.uid is \"u2\", not \"u1\""},
      {"unallocated", unallocated,
       "claim ns/c: status.allocation.devices is not set"},
      {"no device", no_device,
       "claim ns/c: status.allocation.devices.results[0].device is empty"},
      {"type", bad_type, "results[0].device is not a string"},
      {"results", bad_results,
       "status.allocation.devices.results is not a list"},
      {"not object", json::array(), "claim ns/c: not a JSON object"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ClaimAllocation> got =
        ReadAllocation(c.claim, kRef, "gpu.nvidia.com", "node-a");
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument)
        << c.name;
    EXPECT_THAT(got.status().message(), HasSubstr(c.want)) << c.name;
  }
}

}  // namespace
}  // namespace gpulet::dra
