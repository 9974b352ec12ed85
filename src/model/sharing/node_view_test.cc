#include "src/model/sharing/node_view.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::sharing {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;

const absl::Time kT0 = absl::FromUnixSeconds(1795496400);

UsedPod Pod(std::string ns, std::string name, std::string container,
            std::string gpu, int64_t units) {
  return UsedPod{.ns = std::move(ns),
                 .name = std::move(name),
                 .containers = {{std::move(container), std::move(gpu), units}}};
}

TEST(BuildNodeMemory, UsedCountsListedAndUnmatched) {
  std::vector<GpuSpace> gpus = {
      {.uuid = "GPU-a", .index = 0, .units = 8},
      {.uuid = "GPU-b", .index = 1, .units = 8, .used = 99, .healthy = false}};
  NodeMemory node =
      BuildNodeMemory("nvidia.com/gpu-memory", 1024, kT0, gpus,
                      {Pod("ns", "p", "c", "GPU-a", 3)},
                      {{"GPU-a", 1, {}, kT0}, {"GPU-b", 2, {}, kT0}});
  EXPECT_EQ(node.gpus[0].used, 4);
  EXPECT_EQ(node.gpus[1].used, 2);
  EXPECT_FALSE(node.gpus[1].healthy);
  ASSERT_EQ(node.pods.size(), 1u);
  EXPECT_EQ(node.observed, kT0);
  EXPECT_EQ(node.placements.size(), 2u);
}

TEST(PendingRequests, UnmatchedAnswersServeOneRequestOfTheirSize) {
  Pending pending{
      .pods = {
          {.uid = "u1",
           .ns = "ns",
           .name = "a",
           .containers = {{"c", 4}, {"d", 2}}},
          {.uid = "u2", .ns = "ns", .name = "b", .containers = {{"c", 2}}}}};
  NodeMemory node;
  auto reqs = PendingRequests(pending, node, {{"GPU-a", 4, {}, kT0}});
  EXPECT_THAT(reqs, ElementsAre(Field(&Request::key, "u1/d"),
                                Field(&Request::key, "u2/c")));
}

TEST(PrunePending, DropsAdmittedGoneAndTimedOut) {
  Pending pending{.pods = {
                      {.uid = "u1",
                       .ns = "ns",
                       .name = "admitted",
                       .time = kT0,
                       .containers = {{"c", 1}}},
                      {.uid = "u2",
                       .ns = "ns",
                       .name = "gone",
                       .time = kT0,
                       .containers = {{"c", 1}}},
                      {.uid = "u3",
                       .ns = "ns",
                       .name = "old",
                       .time = kT0 - absl::Minutes(6),
                       .containers = {{"c", 1}}},
                      {.uid = "u4",
                       .ns = "ns",
                       .name = "waiting",
                       .time = kT0,
                       .containers = {{"c", 1}}},
                  }};
  NodeMemory node;
  node.pods = {Pod("ns", "admitted", "c", "GPU-a", 1)};
  std::vector<std::string> asked;
  Pending out = PrunePending(
      pending, node, kT0, absl::Minutes(5), [&](const PendingPod& p) {
        asked.push_back(p.name);
        return p.name == "gone" ? PodFate::kGone : PodFate::kWaiting;
      });
  EXPECT_THAT(out.pods, ElementsAre(Field(&PendingPod::name, "waiting")));
  EXPECT_THAT(asked, ElementsAre("gone", "waiting"));
}

TEST(PrunePending, KeepsAPodWhoseContainersAreNotAllListed) {
  Pending pending{.pods = {{.uid = "u1",
                            .ns = "ns",
                            .name = "two",
                            .time = kT0,
                            .containers = {{"c0", 4}, {"c1", 16}}}}};
  NodeMemory node;
  node.pods = {Pod("ns", "two", "c0", "GPU-a", 4)};
  Pending out =
      PrunePending(pending, node, kT0, absl::Minutes(5),
                   [](const PendingPod&) { return PodFate::kWaiting; });
  EXPECT_THAT(out.pods, ElementsAre(Field(&PendingPod::name, "two")));
}

}  // namespace
}  // namespace gpulet::sharing
