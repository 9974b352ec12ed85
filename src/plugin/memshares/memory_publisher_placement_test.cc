// MemoryPublisher's placements (fixture in
// src/plugin/testing/memory_publisher_fixture.h): an Allocate answer
// written to the Node before the plugin answers, counted once across
// kubelet restarts, replaced by the listed pod, and expired.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/model/sharing/annotations.h"
#include "src/plugin/memshares/memory_publisher.h"
#include "src/plugin/testing/memory_publisher_fixture.h"

namespace gpulet::nodeagent {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// Allocate's placement is written with the last listing (ns/p on GPU-a),
// counted in its GPU's used; a conflict reads again.
TEST_F(PublisherTest, PlacementIsWrittenWithTheResourceVersion) {
  transport_.AddResponse(200, NodeWithMemory("6", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  EXPECT_TRUE(publisher_->OnAllocate("GPU-b", 4, kB0To3)
                  .ok());  // not started: no write yet
  EXPECT_EQ(transport_.requests().size(), 2u);
  transport_.AddResponse(200, NodeWithMemory("7", ""));
  transport_.AddResponse(
      409, R"({"kind":"Status","reason":"Conflict","code":409,"message":"x"})");
  transport_.AddResponse(200, NodeWithMemory("8", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->WritePlacement({"GPU-b", 4, kB0To3, kNow}).ok());
  EXPECT_THAT(Calls(),
              ElementsAre("GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                          "GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                          "GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1"));
  EXPECT_EQ(Body(5)["metadata"]["resourceVersion"], "8");
  EXPECT_FALSE(Body(5)["metadata"]["annotations"].contains(
      std::string(sharing::kPendingAnnotation)));
  sharing::NodeMemory node = Written(Body(5));
  EXPECT_EQ(node.gpus[0].used, 2);
  EXPECT_EQ(node.gpus[1].used, 4);
  EXPECT_EQ(node.gpus[1].units, 8) << "the kubelet's count";
  ASSERT_EQ(node.pods.size(), 1u);
  ASSERT_EQ(node.placements.size(), 1u);
  EXPECT_EQ(node.placements[0].ids, kB0To3);
  EXPECT_EQ(node.observed, kNow);

  // Written already (by a sync or an earlier attempt): no second patch.
  Json again = Json::parse(NodeWithMemory("9", ""));
  again["metadata"]["annotations"][std::string(sharing::kNodeAnnotation)] =
      sharing::EncodeNodeMemory(node);
  transport_.AddResponse(200, again.dump());
  ASSERT_TRUE(publisher_->WritePlacement({"GPU-b", 4, kB0To3, kNow}).ok());
  EXPECT_EQ(transport_.requests().size(), 7u);
}

// ns/p was deleted while the kubelet was down; the restarted kubelet gives
// its units and the rest of GPU-a to a new container before any sync
// lists again. The annotation as last written still counts p: adding the
// answer to it would show GPU-a used 10 of 8. The write counts the units
// once.
TEST_F(PublisherTest, PlacementOfUnitsOfAPodDeletedWhileTheKubeletWasDown) {
  transport_.AddResponse(200, NodeWithMemory("7", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  std::vector<std::string> all;
  for (int k = 0; k < 8; ++k) all.push_back("GPU-a::m" + std::to_string(k));
  fake_kubelet_.Set({}, {});
  EXPECT_TRUE(publisher_->OnAllocate("GPU-a", 8, all).ok());
  transport_.AddResponse(200, NodeWithMemory("8", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->WritePlacement({"GPU-a", 8, all, kNow}).ok());
  sharing::NodeMemory node = Written(Body(3));
  EXPECT_EQ(node.gpus[0].used, 8);
  EXPECT_TRUE(node.pods.empty());
  ASSERT_EQ(node.placements.size(), 1u);
}

// A restarted kubelet allocates again for ns/p, which it listed before
// under the same units: one container, counted once.
TEST_F(PublisherTest, AContainerAllocatedAgainCountsOnce) {
  transport_.AddResponse(200, NodeWithMemory("7", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  const std::vector<std::string> ids = {"GPU-a::m0", "GPU-a::m1"};
  EXPECT_TRUE(publisher_->OnAllocate("GPU-a", 2, ids).ok());
  transport_.AddResponse(200, NodeWithMemory("8", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->WritePlacement({"GPU-a", 2, ids, kNow}).ok());
  sharing::NodeMemory node = Written(Body(3));
  EXPECT_EQ(node.gpus[0].used, 2);
  EXPECT_TRUE(node.pods.empty()) << "p's entry is the placement now";
  EXPECT_EQ(node.placements.size(), 1u);
}

TEST_F(PublisherTest, PlacementWriteFailuresAreErrors) {
  EXPECT_TRUE(publisher_->OnAllocate("GPU-b", 4, kB0To3).ok());
  transport_.AddResponse(
      503, R"({"kind":"Status","reason":"ServiceUnavailable","code":503})");
  EXPECT_FALSE(publisher_->WritePlacement({"GPU-b", 4, kB0To3, kNow}).ok());
  // The kubelet never listed: nothing to write the answer beside.
  transport_.AddResponse(200, NodeJson("7", ""));
  absl::Status none = publisher_->WritePlacement({"GPU-b", 4, kB0To3, kNow});
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.message(), HasSubstr("no PodResources listing yet"));
  // Unknown to the ledger (attributed or expired since): nothing to write.
  transport_.AddResponse(200, NodeWithMemory("7", ""));
  EXPECT_TRUE(
      publisher_->WritePlacement({"GPU-a", 1, {"GPU-a::m7"}, kNow}).ok());
  EXPECT_EQ(transport_.requests().size(), 3u);
}

// The kubelet lists the allocated container under ns/p: the sync replaces
// the placement by p's entry and prunes p's pending entry in one patch.
TEST_F(PublisherTest, SyncReplacesThePlacementByTheListedPod) {
  EXPECT_TRUE(
      publisher_->OnAllocate("GPU-a", 2, {"GPU-a::m0", "GPU-a::m1"}).ok());
  EXPECT_TRUE(publisher_->OnAllocate("GPU-b", 4, kB0To3).ok());
  transport_.AddResponse(
      200,
      NodeWithMemory("7", PendingJson({{"u-p", "p", 2}, {"u-q", "q", 4}})));
  transport_.AddResponse(
      200,
      R"({"metadata":{"uid":"u-q"},"spec":{},"status":{"phase":"Pending"}})");
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  const Json patch = Body(2);
  sharing::NodeMemory node = Written(patch);
  EXPECT_EQ(node.gpus[0].used, 2);
  EXPECT_EQ(node.gpus[1].used, 4);
  ASSERT_EQ(node.placements.size(), 1u) << "q's is not listed yet";
  EXPECT_EQ(node.placements[0].gpu, "GPU-b");
  auto pending = sharing::ParsePending(
      patch["metadata"]["annotations"][std::string(sharing::kPendingAnnotation)]
          .get<std::string>());
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_THAT(pending->pods,
              ElementsAre(Field(&sharing::PendingPod::name, "q")));
  // q's request is served by the placement: nothing left to keep fitting.
  EXPECT_TRUE(publisher_->Pending(false)->empty());
}

// A placement the kubelet never lists expires after the pending timeout;
// a pod the kubelet no longer lists (deleted) stops counting at once.
TEST_F(PublisherTest, PlacementsExpireAndDeletedPodsStopCounting) {
  EXPECT_TRUE(publisher_->OnAllocate("GPU-b", 4, kB0To3).ok());
  transport_.AddResponse(200, NodeWithMemory("7", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  EXPECT_EQ(Written(Body(1)).placements.size(), 1u);

  wall_.Set(kNow + absl::Minutes(6));
  fake_kubelet_.Set({}, {});
  transport_.AddResponse(200, NodeWithMemory("8", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  sharing::NodeMemory node = Written(Body(3));
  EXPECT_TRUE(node.placements.empty());
  EXPECT_TRUE(node.pods.empty());
  EXPECT_EQ(node.gpus[0].used, 0);
  EXPECT_EQ(node.gpus[1].used, 0);
}

}  // namespace
}  // namespace gpulet::nodeagent
