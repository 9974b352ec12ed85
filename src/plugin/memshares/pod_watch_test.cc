// PodWatch: the node's pods from the list and the watch events, and which
// of them ask for the shared resource.
#include "src/plugin/memshares/pod_watch.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

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

class PodWatchTest : public ::testing::Test {
 protected:
  // Starts the watch after the list of `pods` (resourceVersion 10) and the
  // watch `events`, and waits until it reported `changes` changes.
  PodWatch::View Run(const Json& pods, std::vector<std::string> events,
                     int changes) {
    transport_.AddResponse(200, Json{{"kind", "PodList"},
                                     {"metadata", {{"resourceVersion", "10"}}},
                                     {"items", pods}}
                                    .dump());
    if (!events.empty()) transport_.AddStream(std::move(events));
    std::atomic<int> seen = 0;
    PodWatch watch(api_, "n1", kResource, [&seen] { ++seen; });
    EXPECT_FALSE(watch.Snapshot().listed);
    watch.Start(clock_);
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (seen < changes && absl::Now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_GE(seen, changes);
    watch.RequestStop();
    return watch.Snapshot();
  }

  kube::FakeTransport transport_;
  common::FakeClock clock_;
  kube::Client api_{
      transport_, clock_,
      kube::ClientOptions{.qps = 1000, .burst = 1000, .max_attempts = 1}};
};

TEST_F(PodWatchTest, KnowsTheNodesPodsAndWhichAskForTheResource) {
  // The list and three events; then the watch ends and is retried.
  const PodWatch::View view = Run(
      Json::array({Pod("a", "Running", true), Pod("b", "Running", false),
                   Pod("done", "Succeeded", true)}),
      {Event("ADDED", Pod("d", "Pending", true, "initContainers", "requests")),
       Event("DELETED", Pod("a", "Running", true)),
       Event("MODIFIED", Pod("b", "Failed", false))},
      4);
  EXPECT_TRUE(view.listed);
  EXPECT_THAT(view.uids, ElementsAre(Pair("ns/d", "u-d")));
  EXPECT_THAT(view.asking, ElementsAre("ns/d"));
}

TEST_F(PodWatchTest, ThePodsBeforeAnEventAreTheList) {
  const PodWatch::View view =
      Run(Json::array({Pod("a", "Running", true), Pod("b", "Pending", false)}),
          {}, 1);
  EXPECT_TRUE(view.listed);
  EXPECT_THAT(view.uids, ElementsAre(Pair("ns/a", "u-a"), Pair("ns/b", "u-b")));
  EXPECT_THAT(view.asking, ElementsAre("ns/a"));
}

}  // namespace
}  // namespace gpulet::nodeagent
