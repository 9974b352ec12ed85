// MemoryPublisher's syncs (fixture in
// src/plugin/testing/memory_publisher_fixture.h): the allocation written
// and the pending pods pruned, conflicts, unreadable annotations,
// preferred allocation's choices written at the Node's version, the
// kubelet down, and the pods it reads.
#include "src/plugin/memshares/memory_publisher.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/model/sharing/annotations.h"
#include "src/plugin/testing/memory_publisher_fixture.h"

namespace gpulet::nodeagent {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using Json = nlohmann::json;

TEST_F(PublisherTest, WritesTheAllocationAndPrunesAdmittedAndGonePods) {
  transport_.AddResponse(200, NodeJson("7", PendingJson({{"u-p", "p", 2},
                                                         {"u-q", "q", 4},
                                                         {"u-r", "r", 1}})));
  transport_.AddResponse(
      200,
      R"({"metadata":{"uid":"u-q"},"spec":{},"status":{"phase":"Pending"}})");
  transport_.AddResponse(404,
                         R"({"kind":"Status","reason":"NotFound","code":404})");
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());

  EXPECT_THAT(Calls(), ElementsAre("GET /api/v1/nodes/n1",
                                   "GET /api/v1/namespaces/ns/pods/q",
                                   "GET /api/v1/namespaces/ns/pods/r",
                                   "PATCH /api/v1/nodes/n1"));
  Json patch = Body(3);
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "7");
  const Json& annotations = patch["metadata"]["annotations"];
  auto node = sharing::ParseNodeMemory(
      annotations[std::string(sharing::kNodeAnnotation)].get<std::string>());
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->resource, "nvidia.com/gpu-memory");
  EXPECT_EQ(node->observed, kNow);
  ASSERT_EQ(node->gpus.size(), 2u);
  EXPECT_EQ(node->gpus[0].units, 8) << "the kubelet's count wins";
  EXPECT_EQ(node->gpus[0].used, 2);
  EXPECT_EQ(node->gpus[1].used, 0);
  ASSERT_EQ(node->pods.size(), 1u);
  EXPECT_EQ(node->pods[0].name, "p");
  EXPECT_THAT(node->pods[0].containers,
              ElementsAre(Field(&sharing::UsedContainer::units, 2)));
  auto pending = sharing::ParsePending(
      annotations[std::string(sharing::kPendingAnnotation)].get<std::string>());
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_THAT(pending->pods,
              ElementsAre(Field(&sharing::PendingPod::name, "q")));

  EXPECT_EQ(publisher_->syncs(), 1);
  EXPECT_EQ(registry_.Find("gpulet_gpu_memory_units")->Value({"GPU-a", "used"}),
            2);
  // Pending units are shown where the packing rule puts them.
  EXPECT_EQ(
      registry_.Find("gpulet_gpu_memory_units")->Value({"GPU-a", "pending"}),
      4);
  // q's 4 units are what the plugin must keep fitting.
  EXPECT_THAT(*publisher_->Pending(false),
              ElementsAre(Field(&sharing::Request::units, 4)));
}

// p's Allocate answer stops counting once the kubelet lists p; the write
// of that sync fails. The plugin's pending requests must not count p again
// meanwhile: its units are in use, not pending.
TEST_F(PublisherTest, AListedPodIsNotPendingWhileTheWriteFails) {
  EXPECT_TRUE(
      publisher_->OnAllocate("GPU-a", 2, {"GPU-a::m0", "GPU-a::m1"}).ok());
  const std::string node =
      NodeJson("7", PendingJson({{"u-p", "p", 2}, {"u-q", "q", 4}}));
  transport_.AddResponse(200, node);
  transport_.AddResponse(
      200,
      R"({"metadata":{"uid":"u-q"},"spec":{},"status":{"phase":"Pending"}})");
  transport_.AddResponse(
      500, R"({"kind":"Status","reason":"InternalError","code":500})");
  EXPECT_FALSE(publisher_->Sync().ok());
  transport_.AddResponse(200, node);
  EXPECT_THAT(*publisher_->Pending(true),
              ElementsAre(Field(&sharing::Request::units, 4)));
}

TEST_F(PublisherTest, ConflictReadsAgainAndRetries) {
  transport_.AddResponse(200, NodeJson("7", ""));
  transport_.AddResponse(
      409, R"({"kind":"Status","reason":"Conflict","code":409,"message":"x"})");
  transport_.AddResponse(200, NodeJson("8", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  EXPECT_THAT(Calls(),
              ElementsAre("GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                          "GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1"));
  EXPECT_EQ(Body(3)["metadata"]["resourceVersion"], "8");
  EXPECT_FALSE(Body(3)["metadata"]["annotations"].contains(
      std::string(sharing::kPendingAnnotation)))
      << "nothing pending, nothing to prune: the extender's key is not touched";
}

// Each pending pod's fate is one GET between the Node's read and the
// patch: asked again on every attempt, a long pending list (pods bound
// while the API server was away) kept the window open for seconds and
// every patch conflicting. Asked once per sync, a retry reads the Node and
// patches at once; a pod found gone is not asked again after a failed
// sync either.
TEST_F(PublisherTest, AConflictDoesNotAskPendingPodsAgain) {
  const std::string pending = PendingJson({{"u-q", "q", 4}, {"u-r", "r", 1}});
  const std::string q_waiting =
      R"({"metadata":{"uid":"u-q"},"spec":{},"status":{"phase":"Pending"}})";
  const std::string not_found =
      R"({"kind":"Status","reason":"NotFound","code":404})";
  transport_.AddResponse(200, NodeJson("7", pending));
  transport_.AddResponse(200, q_waiting);
  transport_.AddResponse(404, not_found);
  transport_.AddResponse(
      409, R"({"kind":"Status","reason":"Conflict","code":409,"message":"x"})");
  transport_.AddResponse(200, NodeJson("8", pending));
  transport_.AddResponse(
      500, R"({"kind":"Status","reason":"InternalError","code":500})");
  EXPECT_FALSE(publisher_->Sync().ok());
  EXPECT_THAT(
      Calls(),
      ElementsAre("GET /api/v1/nodes/n1", "GET /api/v1/namespaces/ns/pods/q",
                  "GET /api/v1/namespaces/ns/pods/r", "PATCH /api/v1/nodes/n1",
                  "GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1"));
  EXPECT_EQ(Body(5)["metadata"]["resourceVersion"], "8");

  // The next sync asks q again (waiting may have changed), never r.
  transport_.AddResponse(200, NodeJson("9", pending));
  transport_.AddResponse(200, q_waiting);
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  EXPECT_THAT(
      Calls(),
      ElementsAre("GET /api/v1/nodes/n1", "GET /api/v1/namespaces/ns/pods/q",
                  "GET /api/v1/namespaces/ns/pods/r", "PATCH /api/v1/nodes/n1",
                  "GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                  "GET /api/v1/nodes/n1", "GET /api/v1/namespaces/ns/pods/q",
                  "PATCH /api/v1/nodes/n1"));
  auto written =
      sharing::ParsePending(Body(8)["metadata"]["annotations"]
                                   [std::string(sharing::kPendingAnnotation)]
                                       .get<std::string>());
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(written->pods,
              ElementsAre(Field(&sharing::PendingPod::name, "q")));
}

TEST_F(PublisherTest, GarbagePendingAnnotationIsIgnoredAndCounted) {
  transport_.AddResponse(200, NodeJson("7", "{not json"));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  EXPECT_FALSE(Body(1)["metadata"]["annotations"].contains(
      std::string(sharing::kPendingAnnotation)));
  EXPECT_EQ(registry_.Find("gpulet_memory_annotation_errors_total")
                ->Value({"pending"}),
            1);
  EXPECT_TRUE(publisher_->Pending(false)->empty());
}

// Preferred allocation's choice is written at the version of the Node its
// pending requests were read from, and from then on counts like an
// Allocate answer: r (4 units) is served by it, s still waits.
TEST_F(PublisherTest, AChoiceIsWrittenAtTheVersionItWasMadeFrom) {
  transport_.AddResponse(200, NodeJson("7", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  transport_.AddResponse(
      200, NodeJson("8", PendingJson({{"u-r", "r", 4}, {"u-s", "s", 3}})));
  std::string version;
  EXPECT_EQ(publisher_->Pending(true, &version)->size(), 2u);
  EXPECT_EQ(version, "8");

  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Reserve("GPU-b", 4, kB0To3, version).ok());
  EXPECT_EQ(Body(3)["metadata"]["resourceVersion"], "8");
  sharing::NodeMemory node = Written(Body(3));
  ASSERT_EQ(node.gpus.size(), 2u);
  EXPECT_EQ(node.gpus[1].used, 4);
  ASSERT_EQ(node.placements.size(), 1u);
  EXPECT_EQ(node.placements[0].ids, kB0To3);
  EXPECT_THAT(*publisher_->Pending(false),
              ElementsAre(Field(&sharing::Request::key, "u-s/c")));

  // The Allocate that follows finds the choice on the Node: no write.
  Json written = Json::parse(NodeJson("9", ""));
  written["metadata"]["annotations"][std::string(sharing::kNodeAnnotation)] =
      sharing::EncodeNodeMemory(node);
  transport_.AddResponse(200, written.dump());
  ASSERT_TRUE(
      publisher_->WritePlacement({"GPU-b", 4, kB0To3, wall_.Now()}).ok());
  EXPECT_EQ(Calls().back(), "GET /api/v1/nodes/n1");
  EXPECT_EQ(Calls().size(), 5u);
}

// The extender bound a pod between the read and the choice's write: the
// write fails with 409 Conflict, nothing of the choice stays, and the next
// sync writes the node without it.
TEST_F(PublisherTest, AChoiceTheNodeChangedUnderIsTakenBack) {
  transport_.AddResponse(200, NodeJson("7", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  transport_.AddResponse(200, NodeJson("8", PendingJson({{"u-r", "r", 4}})));
  std::string version;
  EXPECT_EQ(publisher_->Pending(true, &version)->size(), 1u);

  transport_.AddResponse(
      409, R"({"kind":"Status","reason":"Conflict","code":409,"message":"x"})");
  absl::Status s = publisher_->Reserve("GPU-b", 4, kB0To3, version);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_THAT(*publisher_->Pending(false),
              ElementsAre(Field(&sharing::Request::key, "u-r/c")))
      << "the 4 is pending again, not placed";

  // (No Allocate follows: the kubelet's choice times out, a List may go.)
  wall_.Advance(absl::Seconds(11));
  transport_.AddResponse(200, NodeJson("9", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  sharing::NodeMemory node = Written(Body(5));
  EXPECT_TRUE(node.placements.empty());
  EXPECT_EQ(node.gpus[1].used, 0);
}

TEST_F(PublisherTest, AllocateAnswersCountUntilTheKubeletListsThem) {
  EXPECT_TRUE(publisher_->OnAllocate("GPU-b", 4, kB0To3).ok());
  // The pending r (4 units) is the one just allocated: the plugin keeps
  // only s fitting.
  transport_.AddResponse(
      200, NodeJson("7", PendingJson({{"u-r", "r", 4}, {"u-s", "s", 3}})));
  EXPECT_THAT(*publisher_->Pending(true),
              ElementsAre(Field(&sharing::Request::key, "u-s/c")));

  transport_.AddResponse(200, NodeJson("8", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  auto node = sharing::ParseNodeMemory(
      Body(2)["metadata"]["annotations"][std::string(sharing::kNodeAnnotation)]
          .get<std::string>());
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->gpus[1].used, 4) << "the answer counts before it is listed";
}

TEST_F(PublisherTest, KubeletDownIsAnErrorAndWritesNothing) {
  fake_kubelet_.Set({}, {},
                    grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"));
  absl::Status s = publisher_->Sync();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("pod resources List"));
  EXPECT_TRUE(transport_.requests().empty());
  EXPECT_EQ(registry_.Find("gpulet_memory_syncs_total")->Value({"error"}), 1);
}

// The node agent reads pods only as its RBAC note says (docs/security.md):
// the list and watch of its own node's pods (field selector
// spec.nodeName), and each pending pod of its Node by name (the GETs of
// WritesTheAllocationAndPrunesAdmittedAndGonePods); never all pods.
TEST_F(PublisherTest, ListsOnlyThePodsOfItsNode) {
  publisher_->Start(clock_);
  auto pod_reads = [this] {
    std::vector<std::string> out;
    for (const kube::Request& r : transport_.requests()) {
      if (absl::StrContains(r.path, "/pods")) out.push_back(r.path);
    }
    return out;
  };
  // Nothing is scripted: every request fails and is retried; wait for the
  // first list of pods.
  while (pod_reads().empty()) std::this_thread::yield();
  publisher_.reset();
  const std::vector<std::string> reads = pod_reads();
  ASSERT_FALSE(reads.empty());
  for (const std::string& path : reads) {
    EXPECT_THAT(path, ::testing::StartsWith(
                          "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&"));
  }
}

}  // namespace
}  // namespace gpulet::nodeagent
