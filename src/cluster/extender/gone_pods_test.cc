#include "src/cluster/extender/gone_pods.h"

#include "gtest/gtest.h"
#include "src/cluster/testing/test_nodes.h"

namespace gpulet::extender {
namespace {

using testing::Memory;
using testing::NodeObject;
using testing::PendingEntry;
using testing::PodObject;

nlohmann::json WithPhase(nlohmann::json pod, const char* phase) {
  pod["status"]["phase"] = phase;
  return pod;
}

TEST(GonePods, OnlyDeletedOrFinishedPodsAreGone) {
  GonePods gone;
  gone.Replace({WithPhase(PodObject("a", {1}), "Running"),
                WithPhase(PodObject("b", {1}), "Succeeded")});
  EXPECT_FALSE(gone.Contains("uid-a"));
  EXPECT_TRUE(gone.Contains("uid-b"));
  gone.Apply({.type = kube::EventType::kModified,
              .object = WithPhase(PodObject("c", {1}), "Pending")});
  EXPECT_FALSE(gone.Contains("uid-c"));
  gone.Apply({.type = kube::EventType::kModified,
              .object = WithPhase(PodObject("c", {1}), "Failed")});
  EXPECT_TRUE(gone.Contains("uid-c"));
  gone.Apply(
      {.type = kube::EventType::kDeleted, .object = PodObject("a", {1})});
  EXPECT_TRUE(gone.Contains("uid-a"));
  // A re-list does not forget what was deleted.
  gone.Replace({});
  EXPECT_EQ(gone.size(), 3u);
}

TEST(GonePods, PendingEntriesOfGonePodsDoNotCount) {
  GonePods gone;
  gone.Apply(
      {.type = kube::EventType::kDeleted, .object = PodObject("x", {1})});
  const sharing::NodeMemory memory = Memory("n1", {{16, 0}});
  const sharing::Pending pending{
      .pods = {PendingEntry("uid-x", {12}), PendingEntry("live", {2})}};
  absl::StatusOr<NodeView> view = ReadNode(NodeObject("n1", &memory, &pending));
  ASSERT_TRUE(view.ok());
  const NodeView without = gone.Without(*view);
  ASSERT_EQ(without.pending.pods.size(), 1u);
  EXPECT_EQ(without.pending.pods[0].uid, "live");
  absl::StatusOr<PodRequest> pod = ReadPod(
      PodObject("p", {12}), testing::kResource, Policy::kBinpack, "pod");
  ASSERT_TRUE(pod.ok());
  EXPECT_FALSE(Evaluate(*view, *pod, testing::kResource).fits);
  EXPECT_TRUE(Evaluate(without, *pod, testing::kResource).fits);
}

}  // namespace
}  // namespace gpulet::extender
