#include "src/dra/kubelet/claim_status.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/dra/testing/test_claims.h"

namespace gpulet::dra {
namespace {

using Json = nlohmann::json;

PreparedDevice Device(const std::string& name, const std::string& uuid) {
  PreparedDevice d;
  d.requests = {"gpu"};
  d.pool = "node-1";
  d.device = name;
  d.uuid = uuid;
  return d;
}

device::Node NodeWithProfiles() {
  device::Node node = testing_claims::TestNode();
  node.gpus[1].mig_devices[0].profile = "1g.10gb";
  node.gpus[1].mig_devices[1].profile = "4g.40gb";
  return node;
}

TEST(ClaimStatusTest, EntriesCarryTheUuidAndTheMigPlacement) {
  PreparedDevice share = Device("gpu-2", "GPU-2222");
  share.share_id = "5f3b7f3e-8c2a-4d43-9a51-0c6f2d1e7a10";
  const Json entries =
      DeviceStatusEntries("gpu.nvidia.com", NodeWithProfiles(),
                          {Device("gpu-0", "GPU-0000"),
                           Device("gpu-1-mig-19-6-1", "MIG-aaaa"), share});
  EXPECT_EQ(entries, Json::parse(R"json([
    {"driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-0",
     "data": {"uuid": "GPU-0000"}},
    {"driver": "gpu.nvidia.com", "pool": "node-1",
     "device": "gpu-1-mig-19-6-1",
     "data": {"uuid": "MIG-aaaa", "parentUUID": "GPU-1111",
              "profile": "1g.10gb", "placement": {"start": 6, "size": 1}}},
    {"driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-2",
     "shareID": "5f3b7f3e-8c2a-4d43-9a51-0c6f2d1e7a10",
     "data": {"uuid": "GPU-2222"}}])json"));
}

TEST(ClaimStatusTest, AnOldCheckpointsDeviceGetsItsUuidFromTheNode) {
  const Json entries =
      DeviceStatusEntries("gpu.nvidia.com", NodeWithProfiles(),
                          {Device("gpu-0", ""), Device("gpu-1-mig-9-0-4", "")});
  EXPECT_EQ(entries[0]["data"], Json({{"uuid", "GPU-0000"}}));
  EXPECT_EQ(entries[1]["data"]["uuid"], "MIG-bbbb");
  EXPECT_EQ(entries[1]["data"]["profile"], "4g.40gb");
  // A device the node no longer has keeps what the name says.
  const Json gone = DeviceStatusEntries("gpu.nvidia.com", NodeWithProfiles(),
                                        {Device("gpu-7-mig-19-0-1", "MIG-x")});
  EXPECT_EQ(gone[0]["data"], Json::parse(R"({"uuid": "MIG-x",
                            "placement": {"start": 0, "size": 1}})"));
}

TEST(ClaimStatusTest, OnlyThisDriversAndPoolsEntriesAreReplaced) {
  const Json claim = Json::parse(R"json({
    "metadata": {"uid": "u-1", "resourceVersion": "42"},
    "status": {"devices": [
      {"driver": "net.example.com", "pool": "node-1", "device": "nic-0"},
      {"driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-0",
       "data": {"uuid": "GPU-old"}},
      {"driver": "gpu.nvidia.com", "pool": "node-2", "device": "gpu-0"}]}})json");
  const Json ours = Json::parse(R"json([
    {"driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-0",
     "data": {"uuid": "GPU-0000"}}])json");
  std::optional<Json> merged =
      MergedDeviceStatus(claim, "gpu.nvidia.com", "node-1", ours);
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(*merged, Json::parse(R"json([
      {"driver": "net.example.com", "pool": "node-1", "device": "nic-0"},
      {"driver": "gpu.nvidia.com", "pool": "node-2", "device": "gpu-0"},
      {"driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-0",
       "data": {"uuid": "GPU-0000"}}])json"));
  EXPECT_EQ(DeviceStatusPatch(claim, *merged),
            Json({{"metadata", {{"uid", "u-1"}, {"resourceVersion", "42"}}},
                  {"status", {{"devices", *merged}}}}));

  // Removing ours keeps the others.
  merged = MergedDeviceStatus(claim, "gpu.nvidia.com", "node-1", Json::array());
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->size(), 2u);
  // Already as wanted: nothing to write.
  Json written = claim;
  written["status"]["devices"][1]["data"]["uuid"] = "GPU-0000";
  EXPECT_FALSE(MergedDeviceStatus(written, "gpu.nvidia.com", "node-1", ours)
                   .has_value());
  EXPECT_FALSE(MergedDeviceStatus(Json::parse(R"({"metadata": {}})"),
                                  "gpu.nvidia.com", "node-1", Json::array())
                   .has_value());
}

}  // namespace
}  // namespace gpulet::dra
