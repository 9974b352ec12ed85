// MemoryPublisher's syncs against a scripted API server (kube's
// FakeTransport) and a fake kubelet serving PodResources on a unix socket.
#include "src/plugin/memshares/memory_publisher.h"

#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/net/testing/fake_transport.h"
#include "src/net/testing/fake_kubelet.h"
#include "src/model/sharing/annotations.h"

namespace gpulet::nodeagent {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using Json = nlohmann::json;

const absl::Time kNow = absl::FromUnixSeconds(1795496400);
const std::vector<std::string> kB0To3 = {"GPU-b::m0", "GPU-b::m1",
                                         "GPU-b::m2", "GPU-b::m3"};

std::string NodeJson(const std::string& resource_version,
                     const std::string& pending) {
  Json node = {{"kind", "Node"},
               {"metadata",
                {{"name", "n1"}, {"resourceVersion", resource_version}}}};
  if (!pending.empty()) {
    node["metadata"]["annotations"][std::string(sharing::kPendingAnnotation)] =
        pending;
  }
  return node.dump();
}

std::string PendingJson(
    const std::vector<std::tuple<std::string, std::string, int64_t>>& pods) {
  sharing::Pending p;
  for (const auto& [uid, name, units] : pods) {
    p.pods.push_back({.uid = uid,
                      .ns = "ns",
                      .name = name,
                      .time = kNow - absl::Seconds(10),
                      .containers = {{"c", units}}});
  }
  return sharing::EncodePending(p);
}

class PublisherTest : public ::testing::Test {
 protected:
  PublisherTest()
      : api_(transport_, clock_,
             {.qps = 1000, .burst = 1000, .max_attempts = 1}),
        kubelet_client_(fake_kubelet_.socket_path()) {}

  void SetUp() override {
    ASSERT_FALSE(fake_kubelet_.socket_path().empty());
    // ns/p holds two units of GPU-a; the node has 8 on each of two GPUs.
    v1::ListPodResourcesResponse list;
    v1::PodResources* pod = list.add_pod_resources();
    pod->set_namespace_("ns");
    pod->set_name("p");
    v1::ContainerResources* c = pod->add_containers();
    c->set_name("c");
    v1::ContainerDevices* d = c->add_devices();
    d->set_resource_name("nvidia.com/gpu-memory");
    d->add_device_ids("GPU-a::m0");
    d->add_device_ids("GPU-a::m1");
    v1::ContainerDevices* other = c->add_devices();
    other->set_resource_name("nvidia.com/gpu");
    other->add_device_ids("GPU-z");
    v1::AllocatableResourcesResponse allocatable;
    v1::ContainerDevices* a = allocatable.add_devices();
    a->set_resource_name("nvidia.com/gpu-memory");
    for (const char* gpu : {"GPU-a", "GPU-b"}) {
      for (int k = 0; k < 8; ++k) {
        a->add_device_ids(std::string(gpu) + "::m" + std::to_string(k));
      }
    }
    fake_kubelet_.Set(list, allocatable);
    PublisherOptions options;
    options.node_name = "n1";
    options.clock = &wall_;
    options.kubelet_grace = absl::ZeroDuration();
    auto metrics = PublisherMetrics::Register(registry_);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    publisher_ = std::make_unique<MemoryPublisher>(api_, kubelet_client_,
                                                   options, *metrics);
    publisher_->SetGpus({{.uuid = "GPU-a", .index = 0, .units = 99},
                         {.uuid = "GPU-b", .index = 1, .units = 99}});
  }

  // The body of the n-th request, parsed.
  Json Body(size_t n) const {
    return Json::parse(transport_.requests().at(n).body);
  }
  std::vector<std::string> Calls() const {
    std::vector<std::string> out;
    for (const kube::Request& r : transport_.requests()) {
      out.push_back(r.method + " " + r.path);
    }
    return out;
  }

  common::FakeClock clock_;
  kube::FakeTransport transport_;
  kube::Client api_;
  podresources::FakeKubelet fake_kubelet_;
  podresources::Client kubelet_client_;
  metrics::Registry registry_;
  common::FakeClock wall_{kNow};  // the annotations' time
  std::unique_ptr<MemoryPublisher> publisher_;
};

// The node annotation a patch body writes.
sharing::NodeMemory Written(const Json& patch) {
  auto node = sharing::ParseNodeMemory(
      patch["metadata"]["annotations"][std::string(sharing::kNodeAnnotation)]
          .get<std::string>());
  EXPECT_TRUE(node.ok()) << node.status();
  return node.ok() ? *node : sharing::NodeMemory{};
}

// A Node whose gpulet.dev/gpu-memory has GPU-a (8 units, 2 used by ns/p)
// and GPU-b (8 units, none used), and `pending` as pending annotation.
std::string NodeWithMemory(const std::string& resource_version,
                           const std::string& pending) {
  sharing::NodeMemory memory{
      .resource = "nvidia.com/gpu-memory",
      .observed = kNow,
      .gpus = {{.uuid = "GPU-a", .index = 0, .units = 8, .used = 2},
               {.uuid = "GPU-b", .index = 1, .units = 8}},
      .pods = {{.ns = "ns", .name = "p", .containers = {{"c", "GPU-a", 2}}}}};
  Json node = Json::parse(NodeJson(resource_version, pending));
  node["metadata"]["annotations"][std::string(sharing::kNodeAnnotation)] =
      sharing::EncodeNodeMemory(memory);
  return node.dump();
}

TEST_F(PublisherTest, WritesTheAllocationAndPrunesAdmittedAndGonePods) {
  transport_.AddResponse(
      200, NodeJson("7", PendingJson({{"u-p", "p", 2},
                                      {"u-q", "q", 4},
                                      {"u-r", "r", 1}})));
  transport_.AddResponse(
      200, R"({"metadata":{"uid":"u-q"},"spec":{},"status":{"phase":"Pending"}})");
  transport_.AddResponse(404, R"({"kind":"Status","reason":"NotFound","code":404})");
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
  EXPECT_THAT(pending->pods, ElementsAre(Field(&sharing::PendingPod::name, "q")));

  EXPECT_EQ(publisher_->syncs(), 1);
  EXPECT_EQ(registry_.Find("gpulet_gpu_memory_units")->Value({"GPU-a", "used"}),
            2);
  // Pending units are shown where the packing rule puts them.
  EXPECT_EQ(
      registry_.Find("gpulet_gpu_memory_units")->Value({"GPU-a", "pending"}),
      4);
  // q's 4 units are what the plugin must keep fitting.
  EXPECT_THAT(publisher_->Pending(false),
              ElementsAre(Field(&sharing::Request::units, 4)));
}

// p's Allocate answer stops counting once the kubelet lists p; the write
// of that sync fails. The plugin's pending requests must not count p again
// meanwhile: its units are in use, not pending.
TEST_F(PublisherTest, AListedPodIsNotPendingWhileTheWriteFails) {
  publisher_->OnAllocate("GPU-a", 2, {"GPU-a::m0", "GPU-a::m1"});
  const std::string node = NodeJson("7", PendingJson({{"u-p", "p", 2},
                                                      {"u-q", "q", 4}}));
  transport_.AddResponse(200, node);
  transport_.AddResponse(
      200, R"({"metadata":{"uid":"u-q"},"spec":{},"status":{"phase":"Pending"}})");
  transport_.AddResponse(
      500, R"({"kind":"Status","reason":"InternalError","code":500})");
  EXPECT_FALSE(publisher_->Sync().ok());
  transport_.AddResponse(200, node);
  EXPECT_THAT(publisher_->Pending(true),
              ElementsAre(Field(&sharing::Request::units, 4)));
}

TEST_F(PublisherTest, ConflictReadsAgainAndRetries) {
  transport_.AddResponse(200, NodeJson("7", ""));
  transport_.AddResponse(
      409, R"({"kind":"Status","reason":"Conflict","code":409,"message":"x"})");
  transport_.AddResponse(200, NodeJson("8", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  EXPECT_THAT(Calls(), ElementsAre("GET /api/v1/nodes/n1",
                                   "PATCH /api/v1/nodes/n1",
                                   "GET /api/v1/nodes/n1",
                                   "PATCH /api/v1/nodes/n1"));
  EXPECT_EQ(Body(3)["metadata"]["resourceVersion"], "8");
  EXPECT_FALSE(Body(3)["metadata"]["annotations"].contains(
      std::string(sharing::kPendingAnnotation)))
      << "nothing pending, nothing to prune: the extender's key is not touched";
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
  EXPECT_TRUE(publisher_->Pending(false).empty());
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
  EXPECT_EQ(publisher_->Pending(true, &version).size(), 2u);
  EXPECT_EQ(version, "8");

  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Reserve("GPU-b", 4, kB0To3, version).ok());
  EXPECT_EQ(Body(3)["metadata"]["resourceVersion"], "8");
  sharing::NodeMemory node = Written(Body(3));
  ASSERT_EQ(node.gpus.size(), 2u);
  EXPECT_EQ(node.gpus[1].used, 4);
  ASSERT_EQ(node.placements.size(), 1u);
  EXPECT_EQ(node.placements[0].ids, kB0To3);
  EXPECT_THAT(publisher_->Pending(false),
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
  EXPECT_EQ(publisher_->Pending(true, &version).size(), 1u);

  transport_.AddResponse(
      409, R"({"kind":"Status","reason":"Conflict","code":409,"message":"x"})");
  absl::Status s = publisher_->Reserve("GPU-b", 4, kB0To3, version);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_THAT(publisher_->Pending(false),
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
  publisher_->OnAllocate("GPU-b", 4, kB0To3);
  // The pending r (4 units) is the one just allocated: the plugin keeps
  // only s fitting.
  transport_.AddResponse(
      200, NodeJson("7", PendingJson({{"u-r", "r", 4}, {"u-s", "s", 3}})));
  EXPECT_THAT(publisher_->Pending(true),
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
  fake_kubelet_.Set({}, {}, grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"));
  absl::Status s = publisher_->Sync();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("pod resources List"));
  EXPECT_TRUE(transport_.requests().empty());
  EXPECT_EQ(registry_.Find("gpulet_memory_syncs_total")->Value({"error"}), 1);
}

// Allocate's placement is written with the last listing (ns/p on GPU-a),
// counted in its GPU's used; a conflict reads again.
TEST_F(PublisherTest, PlacementIsWrittenWithTheResourceVersion) {
  transport_.AddResponse(200, NodeWithMemory("6", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->Sync().ok());
  publisher_->OnAllocate("GPU-b", 4, kB0To3);  // not started: no write yet
  EXPECT_EQ(transport_.requests().size(), 2u);
  transport_.AddResponse(200, NodeWithMemory("7", ""));
  transport_.AddResponse(
      409, R"({"kind":"Status","reason":"Conflict","code":409,"message":"x"})");
  transport_.AddResponse(200, NodeWithMemory("8", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(
      publisher_->WritePlacement({"GPU-b", 4, kB0To3, kNow}).ok());
  EXPECT_THAT(Calls(), ElementsAre("GET /api/v1/nodes/n1",
                                   "PATCH /api/v1/nodes/n1",
                                   "GET /api/v1/nodes/n1",
                                   "PATCH /api/v1/nodes/n1",
                                   "GET /api/v1/nodes/n1",
                                   "PATCH /api/v1/nodes/n1"));
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
  ASSERT_TRUE(
      publisher_->WritePlacement({"GPU-b", 4, kB0To3, kNow}).ok());
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
  publisher_->OnAllocate("GPU-a", 8, all);
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
  publisher_->OnAllocate("GPU-a", 2, ids);
  transport_.AddResponse(200, NodeWithMemory("8", ""));
  transport_.AddResponse(200, "{}");
  ASSERT_TRUE(publisher_->WritePlacement({"GPU-a", 2, ids, kNow}).ok());
  sharing::NodeMemory node = Written(Body(3));
  EXPECT_EQ(node.gpus[0].used, 2);
  EXPECT_TRUE(node.pods.empty()) << "p's entry is the placement now";
  EXPECT_EQ(node.placements.size(), 1u);
}

TEST_F(PublisherTest, PlacementWriteFailuresAreErrors) {
  publisher_->OnAllocate("GPU-b", 4, kB0To3);
  transport_.AddResponse(
      503, R"({"kind":"Status","reason":"ServiceUnavailable","code":503})");
  EXPECT_FALSE(publisher_->WritePlacement({"GPU-b", 4, kB0To3, kNow}).ok());
  // The kubelet never listed: nothing to write the answer beside.
  transport_.AddResponse(200, NodeJson("7", ""));
  absl::Status none =
      publisher_->WritePlacement({"GPU-b", 4, kB0To3, kNow});
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.message(), HasSubstr("no PodResources listing yet"));
  // Unknown to the ledger (attributed or expired since): nothing to write.
  transport_.AddResponse(200, NodeWithMemory("7", ""));
  EXPECT_TRUE(publisher_->WritePlacement({"GPU-a", 1, {"GPU-a::m7"}, kNow})
                  .ok());
  EXPECT_EQ(transport_.requests().size(), 3u);
}

// The kubelet lists the allocated container under ns/p: the sync replaces
// the placement by p's entry and prunes p's pending entry in one patch.
TEST_F(PublisherTest, SyncReplacesThePlacementByTheListedPod) {
  publisher_->OnAllocate("GPU-a", 2, {"GPU-a::m0", "GPU-a::m1"});
  publisher_->OnAllocate("GPU-b", 4, kB0To3);
  transport_.AddResponse(
      200, NodeWithMemory("7", PendingJson({{"u-p", "p", 2},
                                            {"u-q", "q", 4}})));
  transport_.AddResponse(
      200, R"({"metadata":{"uid":"u-q"},"spec":{},"status":{"phase":"Pending"}})");
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
  EXPECT_TRUE(publisher_->Pending(false).empty());
}

// A placement the kubelet never lists expires after the pending timeout;
// a pod the kubelet no longer lists (deleted) stops counting at once.
TEST_F(PublisherTest, PlacementsExpireAndDeletedPodsStopCounting) {
  publisher_->OnAllocate("GPU-b", 4, kB0To3);
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
