// PodWatch: the node's pods from the list and the watch events, and which
// of them ask for the shared resource.
#include "src/plugin/memshares/pod_watch.h"

#include <atomic>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/net/kube/client.h"
#include "src/net/testing/fake_transport.h"

namespace gpulet::nodeagent {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using Json = nlohmann::json;

constexpr char kResource[] = "nvidia.com/gpu-memory";

// A pod of namespace ns; `asks` puts the resource in the limits of its
// container `list` ("containers" or "initContainers").
Json Pod(const std::string& name, const std::string& phase, bool asks,
         const std::string& list = "containers",
         const std::string& kind = "limits") {
  Json c = {{"name", "c"}, {"resources", Json::object()}};
  c["resources"][kind] = {{"cpu", "1"}};
  if (asks) c["resources"][kind][kResource] = "2";
  Json pod = {
      {"metadata", {{"namespace", "ns"}, {"name", name}, {"uid", "u-" + name}}},
      {"spec", {{"nodeName", "n1"}}},
      {"status", {{"phase", phase}}}};
  pod["spec"][list] = Json::array({c});
  return pod;
}

std::string Event(const std::string& type, const Json& pod) {
  return Json{{"type", type}, {"object", pod}}.dump() + "\n";
}

TEST(PodWatch, KnowsTheNodesPodsAndWhichAskForTheResource) {
  kube::FakeTransport transport;
  common::FakeClock clock;
  kube::Client api(transport, clock,
                   {.qps = 1000, .burst = 1000, .max_attempts = 1});
  Json list = {{"kind", "PodList"},
               {"metadata", {{"resourceVersion", "10"}}},
               {"items", Json::array({Pod("a", "Running", true),
                                      Pod("b", "Running", false),
                                      Pod("done", "Succeeded", true)})}};
  transport.AddResponse(200, list.dump());
  transport.AddStream(
      {Event("ADDED", Pod("d", "Pending", true, "initContainers", "requests")),
       Event("DELETED", Pod("a", "Running", true)),
       Event("MODIFIED", Pod("b", "Failed", false))});
  std::atomic<int> changes = 0;
  PodWatch watch(api, "n1", kResource, [&changes] { ++changes; });
  EXPECT_FALSE(watch.Snapshot().listed);
  watch.Start(clock);
  // The list and three events; then the watch ends and is retried.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (changes < 4 && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(changes, 4);
  watch.RequestStop();
  const PodWatch::View view = watch.Snapshot();
  EXPECT_TRUE(view.listed);
  EXPECT_THAT(view.uids, ElementsAre(Pair("ns/d", "u-d")));
  EXPECT_THAT(view.asking, ElementsAre("ns/d"));
}

TEST(PodWatch, ThePodsBeforeAnEventAreTheList) {
  kube::FakeTransport transport;
  common::FakeClock clock;
  kube::Client api(transport, clock,
                   {.qps = 1000, .burst = 1000, .max_attempts = 1});
  Json list = {{"kind", "PodList"},
               {"metadata", {{"resourceVersion", "10"}}},
               {"items", Json::array({Pod("a", "Running", true),
                                      Pod("b", "Pending", false)})}};
  transport.AddResponse(200, list.dump());
  std::atomic<int> changes = 0;
  PodWatch watch(api, "n1", kResource, [&changes] { ++changes; });
  watch.Start(clock);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (changes < 1 && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(changes, 1);
  watch.RequestStop();
  const PodWatch::View view = watch.Snapshot();
  EXPECT_TRUE(view.listed);
  EXPECT_THAT(view.uids, ElementsAre(Pair("ns/a", "u-a"), Pair("ns/b", "u-b")));
  EXPECT_THAT(view.asking, ElementsAre("ns/a"));
}

}  // namespace
}  // namespace gpulet::nodeagent
