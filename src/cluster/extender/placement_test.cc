#include "src/cluster/extender/placement.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/cluster/testing/test_nodes.h"

namespace gpulet::extender {
namespace {

using ::testing::HasSubstr;
using testing::kResource;
using testing::Memory;
using testing::NodeObject;
using testing::PendingEntry;
using testing::PodObject;

NodeView View(const sharing::NodeMemory& memory,
              const sharing::Pending& pending = {}) {
  absl::StatusOr<NodeView> v = ReadNode(NodeObject("n1", &memory, &pending));
  EXPECT_TRUE(v.ok()) << v.status();
  return *v;
}

PodRequest Pod(std::vector<int64_t> units, const std::string& policy = "") {
  absl::StatusOr<PodRequest> p =
      ReadPod(PodObject("p", std::move(units), policy), kResource,
              Policy::kBinpack, "pod");
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

TEST(ReadPod, ReadsContainersPolicyAndIdentity) {
  PodRequest p = Pod({4, 0, 2}, "spread");
  EXPECT_EQ(p.ns, "default");
  EXPECT_EQ(p.name, "p");
  EXPECT_EQ(p.uid, "uid-p");
  EXPECT_EQ(p.policy, Policy::kSpread);
  ASSERT_EQ(p.containers.size(), 2u);
  EXPECT_EQ(p.containers[0].name, "c0");
  EXPECT_EQ(p.containers[0].units, 4);
  EXPECT_EQ(p.containers[1].name, "c2");
  EXPECT_EQ(p.containers[1].units, 2);
}

TEST(ReadPod, ErrorsNameTheField) {
  struct Case {
    std::string name;
    nlohmann::json pod;
    std::string want;
  };
  nlohmann::json fraction = PodObject("p", {1});
  fraction["spec"]["containers"][0]["resources"]["limits"][kResource] = "1.5";
  nlohmann::json negative = PodObject("p", {1});
  negative["spec"]["containers"][0]["resources"]["limits"][kResource] = -1;
  nlohmann::json init = PodObject("p", {1});
  init["spec"]["initContainers"] = init["spec"]["containers"];
  nlohmann::json no_name = PodObject("p", {1});
  no_name["metadata"].erase("name");
  const std::vector<Case> cases = {
      {"fraction", fraction,
       "pod.spec.containers[0].resources.limits[nvidia.com/gpu-memory]: "
       "\"1.5\" is not a whole number of units"},
      {"negative", negative,
       "pod.spec.containers[0].resources.limits[nvidia.com/gpu-memory]"},
      {"policy", PodObject("p", {1}, "tight"),
       "pod.metadata.annotations[gpulet.dev/gpu-memory-policy]: \"tight\" is "
       "not a policy (binpack or spread)"},
      {"init", init,
       "pod.spec.initContainers[0]: init containers requesting "
       "nvidia.com/gpu-memory are not supported"},
      {"no name", no_name, "pod.metadata.name: missing"},
      {"not an object", nlohmann::json::array(), "pod: not an object"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<PodRequest> p =
        ReadPod(c.pod, kResource, Policy::kBinpack, "pod");
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(p.status().message(), HasSubstr(c.want)) << c.name;
  }
}

TEST(Evaluate, Table) {
  struct Case {
    std::string name;
    sharing::NodeMemory memory;
    sharing::Pending pending;
    std::vector<int64_t> pod;
    bool fits;
    bool unresolvable;
    std::string reason;  // substring
  };
  sharing::NodeMemory unhealthy = Memory("n1", {{16, 0}});
  unhealthy.gpus[0].healthy = false;
  sharing::NodeMemory other_resource = Memory("n1", {{16, 0}});
  other_resource.resource = "example.com/mem";
  // clang-format off
  const std::vector<Case> cases = {
      {"fits on an empty GPU", Memory("n1", {{16, 0}}), {}, {4}, true, false,
       ""},
      {"containers on different GPUs", Memory("n1", {{8, 4}, {8, 4}}), {},
       {4, 4}, true, false, ""},
      {"too big for any free GPU", Memory("n1", {{16, 6}, {16, 8}}), {}, {12},
       false, false,
       "no single GPU on node n1 has 12 GiB free (largest free: 10 GiB on "
       "GPU-n1-0)"},
      {"too big for any GPU", Memory("n1", {{16, 0}}), {}, {20}, false, true,
       "no GPU on node n1 has 20 GiB (largest: 16 GiB)"},
      {"pending pods take the room", Memory("n1", {{16, 0}}),
       {.pods = {PendingEntry("a", {12})}}, {8}, false, false,
       "beside 1 pending container(s) (12 GiB) not yet admitted; free: 16 "
       "GiB on GPU-n1-0"},
      {"pending pods leave room", Memory("n1", {{16, 0}, {16, 0}}),
       {.pods = {PendingEntry("a", {12})}}, {8}, true, false, ""},
      {"unhealthy GPUs", unhealthy, {}, {1}, false, true,
       "node n1 has no healthy GPU"},
      {"another resource", other_resource, {}, {1}, false, true,
       "node n1 shares GPU memory as example.com/mem, not "
       "nvidia.com/gpu-memory"},
      {"its own pending entry is not counted", Memory("n1", {{16, 0}}),
       {.pods = {PendingEntry("uid-p", {12})}}, {12}, true, false, ""},
  };
  // clang-format on
  for (const Case& c : cases) {
    const Verdict v =
        Evaluate(View(c.memory, c.pending), Pod(c.pod), kResource);
    EXPECT_EQ(v.fits, c.fits) << c.name << ": " << v.reason;
    EXPECT_EQ(v.unresolvable, c.unresolvable) << c.name;
    if (!c.reason.empty()) {
      EXPECT_THAT(v.reason, HasSubstr(c.reason)) << c.name;
    }
  }
}

TEST(Evaluate, PendingPodAlreadyAdmittedCountsOnce) {
  sharing::NodeMemory memory = Memory("n1", {{16, 12}});
  sharing::UsedPod admitted;
  admitted.uid = "a";
  admitted.ns = "default";
  admitted.name = "pending-a";
  admitted.containers.push_back({"c0", "GPU-n1-0", 12});
  memory.pods.push_back(admitted);
  const Verdict v = Evaluate(View(memory, {.pods = {PendingEntry("a", {12})}}),
                             Pod({4}), kResource);
  EXPECT_TRUE(v.fits) << v.reason;
}

TEST(Evaluate, NodeWithoutAnnotationIsUnresolvable) {
  absl::StatusOr<NodeView> view = ReadNode(NodeObject("cpu1", nullptr));
  ASSERT_TRUE(view.ok());
  const Verdict v = Evaluate(*view, Pod({1}), kResource);
  EXPECT_FALSE(v.fits);
  EXPECT_TRUE(v.unresolvable);
  EXPECT_THAT(v.reason, HasSubstr("node cpu1 has no gpulet.dev/gpu-memory "
                                  "annotation"));
}

TEST(Evaluate, InvalidAnnotationsAreReported) {
  nlohmann::json node = NodeObject("n1", nullptr);
  node["metadata"]["annotations"]["gpulet.dev/gpu-memory"] = "{";
  absl::StatusOr<NodeView> view = ReadNode(node);
  ASSERT_TRUE(view.ok());
  Verdict v = Evaluate(*view, Pod({1}), kResource);
  EXPECT_TRUE(v.unresolvable);
  EXPECT_THAT(v.reason,
              HasSubstr("annotation gpulet.dev/gpu-memory is invalid"));

  sharing::NodeMemory memory = Memory("n1", {{16, 0}});
  node = NodeObject("n1", &memory);
  node["metadata"]["annotations"]["gpulet.dev/gpu-memory-pending"] = "[]";
  view = ReadNode(node);
  ASSERT_TRUE(view.ok());
  v = Evaluate(*view, Pod({1}), kResource);
  EXPECT_FALSE(v.fits);
  EXPECT_FALSE(v.unresolvable);
  EXPECT_THAT(v.reason,
              HasSubstr("annotation gpulet.dev/gpu-memory-pending is invalid"));
}

TEST(Evaluate, ReasonsInMiBWhenUnitsAreNotWholeGiB) {
  const Verdict v =
      Evaluate(View(Memory("n1", {{10, 8}}, 512)), Pod({3}), kResource);
  EXPECT_THAT(v.reason, HasSubstr("has 1536 MiB free (largest free: 1 GiB"));
}

TEST(Score, BinpackPrefersFullerSpreadEmptier) {
  const Verdict full =
      Evaluate(View(Memory("n1", {{10, 6}})), Pod({2}), kResource);
  const Verdict empty =
      Evaluate(View(Memory("n1", {{10, 0}})), Pod({2}), kResource);
  EXPECT_EQ(Score(full, Policy::kBinpack), 8);
  EXPECT_EQ(Score(empty, Policy::kBinpack), 2);
  EXPECT_EQ(Score(full, Policy::kSpread), 2);
  EXPECT_EQ(Score(empty, Policy::kSpread), 8);
  EXPECT_EQ(Score(Verdict{}, Policy::kSpread), 0);
}

TEST(PendingEdits, AddReplaceRemove) {
  PodRequest pod = Pod({4});
  sharing::Pending pending{.pods = {PendingEntry("a", {1})}};
  pending = WithPod(pending, pod, absl::FromUnixSeconds(10));
  ASSERT_EQ(pending.pods.size(), 2u);
  EXPECT_TRUE(HasPod(pending, pod));
  pending = WithPod(pending, pod, absl::FromUnixSeconds(20));
  ASSERT_EQ(pending.pods.size(), 2u);
  EXPECT_EQ(pending.pods[1].time, absl::FromUnixSeconds(20));
  bool found = false;
  pending = WithoutPod(pending, pod, &found);
  EXPECT_TRUE(found);
  EXPECT_FALSE(HasPod(pending, pod));
  pending = WithoutPod(pending, pod, &found);
  EXPECT_FALSE(found);
  EXPECT_EQ(pending.pods.size(), 1u);
}

}  // namespace
}  // namespace gpulet::extender
