#include "src/model/sharing/annotations.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::sharing {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;

constexpr char kPendingJson[] =
    R"({"v":1,"pods":[{"uid":"u1","namespace":"ns","name":"p",)"
    R"("time":"2026-11-24T05:00:00Z","containers":[{"name":"c","units":4},)"
    R"({"name":"d","units":2}]}]})";

constexpr char kNodeJson[] =
    R"({"v":1,"resource":"nvidia.com/gpu-memory","unitMiB":1024,)"
    R"("observed":"2026-11-24T05:01:02Z","gpus":[{"uuid":"GPU-a","index":0,)"
    R"("units":80,"used":12,"healthy":true},{"uuid":"GPU-b","index":1,)"
    R"("units":80,"used":0,"healthy":false}],"pods":[{"namespace":"ns",)"
    R"("name":"q","uid":"u2","containers":[{"name":"c","gpu":"GPU-a",)"
    R"("units":12}]}]})";

TEST(Pending, ParsesAndEncodesCanonically) {
  auto p = ParsePending(kPendingJson);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->pods.size(), 1u);
  EXPECT_EQ(p->pods[0].uid, "u1");
  EXPECT_EQ(p->pods[0].ns, "ns");
  EXPECT_EQ(p->pods[0].name, "p");
  EXPECT_EQ(p->pods[0].time, absl::FromUnixSeconds(1795496400));
  EXPECT_THAT(p->pods[0].containers,
              ElementsAre(Field(&PendingContainer::units, 4),
                          Field(&PendingContainer::units, 2)));
  EXPECT_EQ(EncodePending(*p), kPendingJson);
}

TEST(Pending, EmptyListAndFractionalTime) {
  auto p = ParsePending(R"({"v":1,"pods":[]})");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->pods.empty());
  Pending q{.pods = {PendingPod{.ns = "a",
                                .name = "b",
                                .time = absl::FromUnixMillis(1500),
                                .containers = {{"c", 1}}}}};
  auto back = ParsePending(EncodePending(q));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->pods[0].time, absl::FromUnixMillis(1500));
  EXPECT_EQ(back->pods[0].uid, "");
}

TEST(Pending, ErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* want;
  } cases[] = {
      {"", "not valid JSON"},
      {"[]", "(top level): want an object"},
      {R"({"v":2,"pods":[]})", "v: unsupported version"},
      {R"({"pods":[]})", "v: missing"},
      {R"({"v":1})", "pods: missing"},
      {R"({"v":1,"pods":[],"x":1})", "unknown field \"x\""},
      {R"({"v":1,"pods":[{"namespace":"n","name":"p","time":"yesterday",)"
       R"("containers":[]}]})",
       "pods[0].time: not an RFC 3339 time"},
      {R"({"v":1,"pods":[{"namespace":"n","time":"2026-11-24T05:00:00Z",)"
       R"("containers":[]}]})",
       "pods[0].name: missing"},
      {R"({"v":1,"pods":[{"namespace":"n","name":"p","time":)"
       R"("2026-11-24T05:00:00Z","containers":[{"name":"c","units":0}]}]})",
       "pods[0].containers[0].units: must be at least 1"},
      {R"({"v":1,"pods":[{"namespace":"n","name":"p","time":)"
       R"("2026-11-24T05:00:00Z","containers":[{"name":"c","units":1.5}]}]})",
       "pods[0].containers[0].units: want an integer"},
      {R"({"v":1,"pods":[{"namespace":"n","name":"p","time":)"
       R"("2026-11-24T05:00:00Z","containers":[{"name":"c","units":)"
       R"(18446744073709551615}]}]})",
       "pods[0].containers[0].units: want an integer"},
      {R"({"v":1,"pods":[{"namespace":7,"name":"p"}]})",
       "pods[0].namespace: want a string"},
      {R"({"v":1,"pods":[{"namespace":"n","name":"p","time":)"
       R"("infinite-future","containers":[]}]})",
       "pods[0].time: not an RFC 3339 time"},
      {R"({"v":1,"pods":[{"namespace":"n","name":"p","time":)"
       R"("2026-11-24T05:00:00Z","containers":[{"name":"c","units":)"
       R"(1000000001}]}]})",
       "pods[0].containers[0].units: must be at most 1000000000"},
  };
  for (const Case& c : cases) {
    auto p = ParsePending(c.json);
    ASSERT_FALSE(p.ok()) << c.json;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(p.status().message(), HasSubstr(c.want)) << c.json;
    EXPECT_THAT(p.status().message(),
                HasSubstr(std::string(kPendingAnnotation)));
  }
}

TEST(NodeMemory, ParsesAndEncodesCanonically) {
  auto n = ParseNodeMemory(kNodeJson);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->resource, "nvidia.com/gpu-memory");
  EXPECT_EQ(n->unit_mib, 1024);
  ASSERT_EQ(n->gpus.size(), 2u);
  EXPECT_EQ(n->gpus[0].used, 12);
  EXPECT_FALSE(n->gpus[1].healthy);
  ASSERT_EQ(n->pods.size(), 1u);
  EXPECT_EQ(n->pods[0].containers[0].gpu, "GPU-a");
  EXPECT_EQ(EncodeNodeMemory(*n), kNodeJson);
}

TEST(NodeMemory, PlacementsRoundTripAndAreOptional) {
  NodeMemory n{.resource = "r",
               .placements = {{.gpu = "GPU-a",
                               .units = 2,
                               .ids = {"GPU-a::m0", "GPU-a::m1"},
                               .time = absl::FromUnixSeconds(1795496400)}}};
  const std::string text = EncodeNodeMemory(n);
  EXPECT_THAT(text, HasSubstr(R"("placements":[{"gpu":"GPU-a","units":2,)"
                              R"("ids":["GPU-a::m0","GPU-a::m1"],)"
                              R"("time":"2026-11-24T05:00:00Z"}])"));
  auto back = ParseNodeMemory(text);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->placements.size(), 1u);
  EXPECT_EQ(back->placements[0].ids[1], "GPU-a::m1");
  EXPECT_EQ(EncodeNodeMemory(*back), text);
  // An annotation written before placements existed reads as none.
  auto old = ParseNodeMemory(kNodeJson);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE(old->placements.empty());
  EXPECT_EQ(EncodeNodeMemory(*old), kNodeJson);
}

TEST(NodeMemory, ErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* want;
  } cases[] = {
      {"{", "not valid JSON"},
      {R"({"v":1,"resource":"r","unitMiB":0,"observed":)"
       R"("2026-11-24T05:00:00Z","gpus":[],"pods":[]})",
       "unitMiB: must be at least 1"},
      {R"({"v":1,"resource":"r","unitMiB":1,"observed":)"
       R"("2026-11-24T05:00:00Z","gpus":[{"uuid":"g","index":0,"units":1,)"
       R"("used":0,"healthy":"yes"}],"pods":[]})",
       "gpus[0].healthy: want true or false"},
      {R"({"v":1,"resource":"r","unitMiB":1,"observed":)"
       R"("2026-11-24T05:00:00Z","gpus":[],"pods":[{"namespace":"n",)"
       R"("name":"p","containers":[{"name":"c","units":1}]}]})",
       "pods[0].containers[0].gpu: missing"},
      {R"({"v":1,"resource":"","unitMiB":1,"observed":)"
       R"("2026-11-24T05:00:00Z","gpus":[],"pods":[]})",
       "resource: must not be empty"},
      {R"({"v":1,"resource":"r","unitMiB":1,"observed":)"
       R"("2026-11-24T05:00:00Z","gpus":{},"pods":[]})",
       "gpus: want an array"},
      {R"({"v":1,"resource":"r","unitMiB":1,"observed":)"
       R"("2026-11-24T05:00:00Z","gpus":[],"pods":[],"placements":[{"gpu":)"
       R"("g","units":2,"ids":["g::m0"],"time":"2026-11-24T05:00:00Z"}]})",
       "placements[0].ids: lists 1 unit IDs, want units (2)"},
      {R"({"v":1,"resource":"r","unitMiB":1,"observed":)"
       R"("2026-11-24T05:00:00Z","gpus":[],"pods":[],"placements":[{"gpu":)"
       R"("g","units":1,"ids":[3],"time":"2026-11-24T05:00:00Z"}]})",
       "placements[0].ids[0]: want a unit ID"},
      {R"({"v":1,"resource":"r","unitMiB":1,"observed":)"
       R"("2026-11-24T05:00:00Z","gpus":[],"pods":[],"placements":[{"units":)"
       R"(1,"ids":["g::m0"],"time":"2026-11-24T05:00:00Z"}]})",
       "placements[0].gpu: missing"},
  };
  for (const Case& c : cases) {
    auto n = ParseNodeMemory(c.json);
    ASSERT_FALSE(n.ok()) << c.json;
    EXPECT_THAT(n.status().message(), HasSubstr(c.want)) << c.json;
  }
}

TEST(OutstandingRequests, SkipsPodsTheNodeAlreadyLists) {
  Pending pending{
      .pods = {
          {.uid = "u1",
           .ns = "ns",
           .name = "a",
           .containers = {{"c", 4}, {"d", 2}}},
          {.uid = "u2", .ns = "ns", .name = "b", .containers = {{"c", 3}}},
          {.ns = "ns", .name = "c", .containers = {{"c", 1}}},
          // Same name as a listed pod, but a new incarnation.
          {.uid = "u9", .ns = "ns", .name = "d", .containers = {{"c", 5}}},
      }};
  NodeMemory node{
      .pods = {{.uid = "u2",
                .ns = "other",
                .name = "x",
                .containers = {{"c", "GPU-a", 3}}},
               {.ns = "ns", .name = "c", .containers = {{"c", "GPU-a", 1}}},
               {.uid = "u8",
                .ns = "ns",
                .name = "d",
                .containers = {{"c", "GPU-a", 5}}}}};
  auto reqs = OutstandingRequests(pending, node);
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].key, "u1/c");
  EXPECT_EQ(reqs[0].units, 4);
  EXPECT_EQ(reqs[1].key, "u1/d");
  EXPECT_EQ(reqs[2].key, "u9/c");
}

// The kubelet allocates a pod's containers one at a time; between two, it
// lists the pod with the first only. The second still needs its units.
TEST(OutstandingRequests, KeepsContainersOfAPartlyListedPod) {
  Pending pending{.pods = {{.uid = "u1",
                            .ns = "ns",
                            .name = "a",
                            .containers = {{"c0", 4}, {"c1", 16}}}}};
  NodeMemory node{.pods = {{.uid = "u1",
                            .ns = "ns",
                            .name = "a",
                            .containers = {{"c0", "GPU-a", 4}}}}};
  auto reqs = OutstandingRequests(pending, node);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].key, "u1/c1");
  EXPECT_EQ(reqs[0].units, 16);
  EXPECT_FALSE(Admitted(pending.pods[0], node));
  node.pods[0].containers.push_back({"c1", "GPU-b", 16});
  EXPECT_TRUE(OutstandingRequests(pending, node).empty());
  EXPECT_TRUE(Admitted(pending.pods[0], node));
}

// A placement is an admitted container whose pod is not listed yet: it
// serves one outstanding request of its size, whichever pod that is.
TEST(OutstandingRequests, EachPlacementServesOneRequestOfItsSize) {
  Pending pending{
      .pods = {
          {.uid = "u1",
           .ns = "ns",
           .name = "a",
           .containers = {{"c", 4}, {"d", 2}}},
          {.uid = "u2", .ns = "ns", .name = "b", .containers = {{"c", 2}}}}};
  NodeMemory node{.placements = {{.gpu = "GPU-a", .units = 2},
                                 {.gpu = "GPU-b", .units = 3}}};
  auto reqs = OutstandingRequests(pending, node);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].key, "u1/c");
  EXPECT_EQ(reqs[1].key, "u2/c");
}

}  // namespace
}  // namespace gpulet::sharing
