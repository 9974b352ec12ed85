#include "src/cli/memory_status.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/sharing/annotations.h"

namespace gpulet::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// An 80 GiB and a 24 GiB GPU; one admitted pod on each, a pod with two
// containers split over both, one pending pod not admitted yet and one
// pending pod the node already lists.
NodeAnnotations MixedNode() {
  sharing::NodeMemory memory;
  memory.resource = "gpulet.dev/gpu-memory";
  memory.unit_mib = 1024;
  memory.observed = absl::FromUnixSeconds(1790000000);
  memory.gpus = {{.uuid = "GPU-aaaaaaaa-1111-2222-3333-444444444444",
                  .index = 0,
                  .units = 80,
                  .used = 30,
                  .healthy = true},
                 {.uuid = "GPU-bbbbbbbb-1111-2222-3333-444444444444",
                  .index = 1,
                  .units = 24,
                  .used = 4,
                  .healthy = true}};
  memory.pods = {
      {.uid = "u1",
       .ns = "ml",
       .name = "train",
       .containers = {{.name = "c", .gpu = memory.gpus[0].uuid, .units = 20}}},
      {.uid = "u2",
       .ns = "web",
       .name = "infer",
       .containers = {{.name = "a", .gpu = memory.gpus[0].uuid, .units = 10},
                      {.name = "b", .gpu = memory.gpus[1].uuid, .units = 4}}}};
  sharing::Pending pending;
  pending.pods = {
      {.uid = "u3",
       .ns = "ml",
       .name = "eval",
       .time = absl::FromUnixSeconds(1790000000),
       .containers = {{.name = "c", .units = 6}, {.name = "d", .units = 2}}},
      {.uid = "u1",
       .ns = "ml",
       .name = "train",
       .time = absl::FromUnixSeconds(1790000000),
       .containers = {{.name = "c", .units = 20}}}};
  return {.node = "gpu-a",
          .memory = sharing::EncodeNodeMemory(memory),
          .pending = sharing::EncodePending(pending)};
}

// Half-GiB units on one unhealthy GPU, nothing pending.
NodeAnnotations SmallUnitNode() {
  sharing::NodeMemory memory;
  memory.resource = "gpulet.dev/gpu-memory";
  memory.unit_mib = 512;
  memory.observed = absl::FromUnixSeconds(1790000000);
  memory.gpus = {{.uuid = "GPU-cccccccc-1111",
                  .index = 0,
                  .units = 3,
                  .used = 1,
                  .healthy = false}};
  memory.pods = {
      {.uid = "",
       .ns = "default",
       .name = "tiny",
       .containers = {{.name = "c", .gpu = "GPU-cccccccc-1111", .units = 1}}}};
  return {.node = "gpu-b", .memory = sharing::EncodeNodeMemory(memory)};
}

TEST(MemoryStatusTest, MixedSizesPerGpuWithPendingOnTheNode) {
  NodeStatus s = BuildNodeStatus(MixedNode());
  ASSERT_TRUE(s.error.empty()) << s.error;
  ASSERT_TRUE(s.has_shares);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0].free, 50);
  EXPECT_EQ(s.gpus[1].free, 20);
  ASSERT_EQ(s.gpus[0].pods.size(), 2u);
  EXPECT_EQ(s.gpus[0].pods[1].name, "infer");
  EXPECT_EQ(s.gpus[0].pods[1].units, 10);
  // ml/train is admitted already, so only ml/eval is pending.
  ASSERT_EQ(s.pending.size(), 1u);
  EXPECT_EQ(s.pending[0].name, "eval");
  EXPECT_EQ(s.pending[0].units, 8);
}

TEST(MemoryStatusTest, Table) {
  const std::string table = FormatStatusTable(
      {BuildNodeStatus(MixedNode()), BuildNodeStatus(SmallUnitNode())});
  EXPECT_EQ(table,
            "NODE   GPU                         MEMORY   USED    PENDING  FREE "
            "  PODS\n"
            "gpu-a  0 GPU-aaaaaaaa              80GiB    30GiB   -        50GiB"
            "  ml/train:20GiB,web/infer:10GiB\n"
            "gpu-a  1 GPU-bbbbbbbb              24GiB    4GiB    -        20GiB"
            "  web/infer:4GiB\n"
            "gpu-a  pending                     -        -       8GiB     -    "
            "  ml/eval:8GiB\n"
            "gpu-b  0 GPU-cccccccc (unhealthy)  1536MiB  512MiB  -        0GiB "
            "  default/tiny:512MiB\n");
}

TEST(MemoryStatusTest, Json) {
  const nlohmann::json j = StatusJson({BuildNodeStatus(MixedNode())});
  const nlohmann::json& node = j["nodes"][0];
  EXPECT_EQ(node["name"], "gpu-a");
  EXPECT_EQ(node["memoryShares"], true);
  EXPECT_EQ(node["unitMiB"], 1024);
  EXPECT_EQ(node["gpus"][1]["uuid"],
            "GPU-bbbbbbbb-1111-2222-3333-444444444444");
  EXPECT_EQ(node["gpus"][1]["memoryMiB"], 24 * 1024);
  EXPECT_EQ(node["gpus"][1]["usedMiB"], 4 * 1024);
  EXPECT_EQ(node["gpus"][1]["freeMiB"], 20 * 1024);
  EXPECT_EQ(node["gpus"][0]["pods"][0],
            nlohmann::json({{"namespace", "ml"},
                            {"name", "train"},
                            {"units", 20},
                            {"memoryMiB", 20 * 1024}}));
  EXPECT_EQ(node["pending"]["memoryMiB"], 8 * 1024);
  EXPECT_EQ(node["pending"]["pods"][0]["name"], "eval");
}

TEST(MemoryStatusTest, NodeWithoutAnnotationHasNoShares) {
  NodeStatus s = BuildNodeStatus({.node = "cpu-1"});
  EXPECT_TRUE(s.error.empty());
  EXPECT_FALSE(s.has_shares);
  EXPECT_EQ(FormatStatusTable({s}), "node cpu-1: no memory shares\n");
  EXPECT_EQ(StatusJson({s})["nodes"][0],
            nlohmann::json({{"name", "cpu-1"}, {"memoryShares", false}}));
}

TEST(MemoryStatusTest, GarbageAnnotationNamesNodeAndAnnotation) {
  NodeStatus bad = BuildNodeStatus({.node = "gpu-x", .memory = "{not json"});
  EXPECT_THAT(bad.error, HasSubstr("annotation gpulet.dev/gpu-memory: "));
  const std::string table =
      FormatStatusTable({BuildNodeStatus(MixedNode()), bad});
  EXPECT_THAT(table, HasSubstr("gpu-a  0 GPU-aaaaaaaa"));
  EXPECT_THAT(table, HasSubstr("node gpu-x: annotation gpulet.dev/gpu-memory"));
  EXPECT_THAT(StatusJson({bad})["nodes"][0]["error"].get<std::string>(),
              HasSubstr("gpu-memory"));

  NodeAnnotations pending = MixedNode();
  pending.pending = R"({"v":1,"pods":[{"name":7}]})";
  NodeStatus p = BuildNodeStatus(pending);
  EXPECT_THAT(p.error, HasSubstr("annotation gpulet.dev/gpu-memory-pending: "));
  EXPECT_THAT(FormatStatusTable({p}), Not(HasSubstr("GPU-")));
}

TEST(MemoryStatusTest, AnnotationsOfNodeObject) {
  const nlohmann::json node = {
      {"metadata",
       {{"name", "n1"},
        {"annotations", {{"gpulet.dev/gpu-memory", "m"}, {"other", "x"}}}}}};
  NodeAnnotations a = AnnotationsOfNode(node);
  EXPECT_EQ(a.node, "n1");
  EXPECT_EQ(a.memory, "m");
  EXPECT_FALSE(a.pending.has_value());
  EXPECT_EQ(AnnotationsOfNode({{"metadata", {{"name", "n2"}}}}).node, "n2");
}

TEST(MemoryStatusTest, FormatMiB) {
  EXPECT_EQ(FormatMiB(0), "0GiB");
  EXPECT_EQ(FormatMiB(2048), "2GiB");
  EXPECT_EQ(FormatMiB(1536), "1536MiB");
}

}  // namespace
}  // namespace gpulet::cli
