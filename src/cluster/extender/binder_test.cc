#include "src/cluster/extender/binder.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/cluster/testing/fake_api_server.h"
#include "src/cluster/testing/test_nodes.h"
#include "src/net/testing/fake_transport.h"

namespace gpulet::extender {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Memory;
using testing::NodeObject;
using testing::PendingEntry;
using testing::PodObject;

constexpr char kConflict[] =
    R"({"kind":"Status","status":"Failure","reason":"Conflict","code":409,)"
    R"("message":"the object has been modified"})";
constexpr char kPodGone[] =
    R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404,)"
    R"("message":"pods \"p\" not found"})";

class BinderTest : public ::testing::Test {
 protected:
  BinderTest()
      : client_(transport_, clock_,
                {.qps = 0,
                 .max_attempts = 1,
                 .backoff = {.initial = absl::Milliseconds(100),
                             .max = absl::Seconds(1),
                             .jitter = 0}}),
        binder_(client_, cache_, {.max_conflicts = 3, .clock = &wall_}) {}

  std::vector<std::string> Calls() const {
    std::vector<std::string> out;
    for (const kube::Request& r : transport_.requests()) {
      out.push_back(r.method + " " + r.path);
    }
    return out;
  }
  // The pending annotation a PATCH request wrote.
  sharing::Pending Written(size_t request) const {
    const nlohmann::json patch =
        nlohmann::json::parse(transport_.requests()[request].body);
    const auto& value =
        patch["metadata"]["annotations"]["gpulet.dev/gpu-memory-pending"];
    if (value.is_null()) return {};
    absl::StatusOr<sharing::Pending> p =
        sharing::ParsePending(value.get<std::string>());
    EXPECT_TRUE(p.ok()) << p.status();
    return *p;
  }

  void AddNode(const sharing::Pending& pending, const std::string& rv) {
    transport_.AddResponse(200,
                           NodeObject("n1", &memory_, &pending, rv).dump());
  }

  common::FakeClock clock_;
  // The pending entries' time.
  common::FakeClock wall_{absl::FromUnixSeconds(1795496400)};
  kube::FakeTransport transport_;
  kube::Client client_;
  NodeCache cache_;
  Binder binder_;
  sharing::NodeMemory memory_ = Memory("n1", {{16, 4}});
  const BindRequest request_{.pod_name = "p",
                             .pod_namespace = "default",
                             .pod_uid = "uid-p",
                             .node = "n1"};
};

TEST_F(BinderTest, RecordsThePodThenBinds) {
  transport_.AddResponse(200, PodObject("p", {8}).dump());
  AddNode({}, "7");
  sharing::Pending after{.pods = {PendingEntry("uid-p", {8})}};
  AddNode(after, "8");  // the PATCH's answer
  transport_.AddResponse(201, R"({"kind":"Status","status":"Success"})");
  BindOutcome outcome;
  ASSERT_TRUE(binder_.Bind(request_, &outcome).ok());
  EXPECT_TRUE(outcome.reserved);
  EXPECT_EQ(outcome.conflicts, 0);
  EXPECT_THAT(Calls(),
              ElementsAre("GET /api/v1/namespaces/default/pods/p",
                          "GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                          "POST /api/v1/namespaces/default/pods/p/binding"));
  const nlohmann::json patch =
      nlohmann::json::parse(transport_.requests()[2].body);
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "7");
  const sharing::Pending written = Written(2);
  ASSERT_EQ(written.pods.size(), 1u);
  EXPECT_EQ(written.pods[0].uid, "uid-p");
  EXPECT_EQ(written.pods[0].time, absl::FromUnixSeconds(1795496400));
  ASSERT_EQ(written.pods[0].containers.size(), 1u);
  EXPECT_EQ(written.pods[0].containers[0].units, 8);
  const nlohmann::json binding =
      nlohmann::json::parse(transport_.requests()[3].body);
  EXPECT_EQ(binding["target"]["name"], "n1");
  EXPECT_EQ(binding["metadata"]["uid"], "uid-p");
  // The cache has the node as the PATCH left it.
  ASSERT_NE(cache_.Find("n1"), nullptr);
  EXPECT_EQ(cache_.Find("n1")->resource_version, "8");
}

TEST_F(BinderTest, ConflictReadsAgainAndRechecks) {
  transport_.AddResponse(200, PodObject("p", {8}).dump());
  AddNode({}, "7");
  transport_.AddResponse(409, kConflict);
  // Someone else booked 8 units in between: 8 + 8 still fit in 12 free.
  sharing::Pending other{.pods = {PendingEntry("other", {4})}};
  AddNode(other, "9");
  AddNode(other, "10");
  transport_.AddResponse(201, "{}");
  BindOutcome outcome;
  ASSERT_TRUE(binder_.Bind(request_, &outcome).ok());
  EXPECT_EQ(outcome.conflicts, 1);
  const nlohmann::json patch =
      nlohmann::json::parse(transport_.requests()[4].body);
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "9");
  EXPECT_EQ(Written(4).pods.size(), 2u);
}

TEST_F(BinderTest, RefusesWhenItNoLongerFits) {
  transport_.AddResponse(200, PodObject("p", {8}).dump());
  sharing::Pending other{.pods = {PendingEntry("other", {6})}};
  AddNode(other, "7");
  absl::Status s = binder_.Bind(request_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  // The sizes (the pod's, the other pending pods') are the log's only.
  EXPECT_EQ(s.message(),
            "bind pod default/p to node n1: the pod no longer fits on node n1 "
            "(the extender's log says why)");
  EXPECT_EQ(transport_.requests().size(), 2u);  // no PATCH, no Binding
}

TEST_F(BinderTest, FailedBindingRemovesTheEntry) {
  transport_.AddResponse(200, PodObject("p", {8}).dump());
  AddNode({}, "7");
  sharing::Pending after{.pods = {PendingEntry("uid-p", {8})}};
  AddNode(after, "8");
  transport_.AddResponse(404, kPodGone);
  AddNode(after, "8");  // Release reads
  transport_.AddResponse(200, NodeObject("n1", &memory_, nullptr, "9").dump());
  absl::Status s = binder_.Bind(request_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Calls(),
              ElementsAre("GET /api/v1/namespaces/default/pods/p",
                          "GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                          "POST /api/v1/namespaces/default/pods/p/binding",
                          "GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1"));
  EXPECT_TRUE(Written(5).pods.empty());
  const nlohmann::json patch =
      nlohmann::json::parse(transport_.requests()[5].body);
  EXPECT_TRUE(patch["metadata"]["annotations"]["gpulet.dev/gpu-memory-pending"]
                  .is_null());
}

TEST_F(BinderTest, AlreadyRecordedIsNotWrittenAgain) {
  transport_.AddResponse(200, PodObject("p", {8}).dump());
  AddNode({.pods = {PendingEntry("uid-p", {8})}}, "7");
  transport_.AddResponse(201, "{}");
  ASSERT_TRUE(binder_.Bind(request_, nullptr).ok());
  EXPECT_THAT(Calls(),
              ElementsAre("GET /api/v1/namespaces/default/pods/p",
                          "GET /api/v1/nodes/n1",
                          "POST /api/v1/namespaces/default/pods/p/binding"));
}

TEST_F(BinderTest, CurrentCacheNeedsNoNodeRead) {
  cache_.Update(NodeObject("n1", &memory_, nullptr, "7"));
  transport_.AddResponse(200, PodObject("p", {8}).dump());
  AddNode({.pods = {PendingEntry("uid-p", {8})}}, "8");
  transport_.AddResponse(201, "{}");
  ASSERT_TRUE(binder_.Bind(request_, nullptr).ok());
  EXPECT_THAT(Calls(),
              ElementsAre("GET /api/v1/namespaces/default/pods/p",
                          "PATCH /api/v1/nodes/n1",
                          "POST /api/v1/namespaces/default/pods/p/binding"));
  EXPECT_EQ(nlohmann::json::parse(
                transport_.requests()[1].body)["metadata"]["resourceVersion"],
            "7");
}

TEST_F(BinderTest, StaleCacheConflictsThenReadsTheNode) {
  cache_.Update(NodeObject("n1", &memory_, nullptr, "7"));
  transport_.AddResponse(200, PodObject("p", {8}).dump());
  transport_.AddResponse(409, kConflict);
  AddNode({}, "12");
  AddNode({.pods = {PendingEntry("uid-p", {8})}}, "13");
  transport_.AddResponse(201, "{}");
  BindOutcome outcome;
  ASSERT_TRUE(binder_.Bind(request_, &outcome).ok());
  EXPECT_EQ(outcome.conflicts, 1);
  EXPECT_THAT(Calls(),
              ElementsAre("GET /api/v1/namespaces/default/pods/p",
                          "PATCH /api/v1/nodes/n1", "GET /api/v1/nodes/n1",
                          "PATCH /api/v1/nodes/n1",
                          "POST /api/v1/namespaces/default/pods/p/binding"));
}

// Whatever is wrong with the pod, the answer is one message, so that a
// caller learns nothing about pods it does not know the uid of.
TEST_F(BinderTest, PodsNotPlacedHereGetOneAnswer) {
  nlohmann::json no_memory = PodObject("p", {0});
  nlohmann::json bound = PodObject("p", {8});
  bound["spec"]["nodeName"] = "n2";
  nlohmann::json other_scheduler = PodObject("p", {8});
  other_scheduler["spec"]["schedulerName"] = "my-scheduler";
  nlohmann::json deleting = PodObject("p", {8});
  deleting["metadata"]["deletionTimestamp"] = "2026-11-28T10:00:00Z";
  nlohmann::json created_again = PodObject("p", {8});
  created_again["metadata"]["uid"] = "uid-newer";
  for (const nlohmann::json& pod :
       {no_memory, bound, other_scheduler, deleting, created_again}) {
    transport_.AddResponse(200, pod.dump());
  }
  transport_.AddResponse(404, kPodGone);
  const std::string want = std::string("bind pod default/p: ") + kNotPlacedHere;
  for (int i = 0; i < 6; ++i) {
    absl::Status s = binder_.Bind(request_, nullptr);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << i;
    EXPECT_EQ(s.message(), want) << i;
  }
  // A bind without the pod's uid is refused without asking.
  BindRequest no_uid = request_;
  no_uid.pod_uid.clear();
  EXPECT_EQ(binder_.Bind(no_uid, nullptr).message(), want);
  // Only reads: nothing was recorded or bound.
  for (const std::string& call : Calls()) {
    EXPECT_THAT(call, ::testing::StartsWith("GET /api/v1/namespaces/")) << call;
  }
  EXPECT_EQ(Calls().size(), 6u);
}

TEST_F(BinderTest, APodForAnotherSchedulerIsBoundWhenThatOneIsServed) {
  Binder binder(client_, cache_,
                {.scheduler_names = {"default-scheduler", "gpu-scheduler"},
                 .clock = &wall_});
  nlohmann::json pod = PodObject("p", {8});
  pod["spec"]["schedulerName"] = "gpu-scheduler";
  transport_.AddResponse(200, pod.dump());
  AddNode({}, "7");
  AddNode({.pods = {PendingEntry("uid-p", {8})}}, "8");
  transport_.AddResponse(201, "{}");
  EXPECT_TRUE(binder.Bind(request_, nullptr).ok());
}

TEST_F(BinderTest, AnApiServerErrorIsNotPassedOn) {
  transport_.AddResponse(
      403, R"({"kind":"Status","status":"Failure","reason":"Forbidden",)"
           R"("code":403,"message":"pods "p" is forbidden: secret detail"})");
  absl::Status s = binder_.Bind(request_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("secret")));
}

TEST_F(BinderTest, ANodeWithoutMemorySharesIsNotInTheFitSet) {
  transport_.AddResponse(200, PodObject("p", {8}).dump());
  transport_.AddResponse(200, NodeObject("n1", nullptr, nullptr, "7").dump());
  absl::Status s = binder_.Bind(request_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("has no gpulet.dev/gpu-memory annotation"));
  EXPECT_EQ(Calls().size(), 2u);  // no PATCH, no Binding
}

TEST_F(BinderTest, GivesUpAfterRepeatedConflicts) {
  transport_.AddResponse(200, PodObject("p", {8}).dump());
  for (int i = 0; i < 4; ++i) {
    AddNode({}, std::to_string(7 + i));
    transport_.AddResponse(409, kConflict);
  }
  BindOutcome outcome;
  absl::Status s = binder_.Bind(request_, &outcome);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(outcome.conflicts, 4);
  EXPECT_FALSE(outcome.reserved);
}

TEST_F(BinderTest, BadNamesAreRefusedBeforeAnyRequest) {
  BindRequest request = request_;
  request.node = "../nodes/x";
  EXPECT_EQ(binder_.Bind(request, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(transport_.requests().empty());
}

}  // namespace
}  // namespace gpulet::extender

namespace gpulet::extender {
namespace {

// Two extender replicas, each with its own (equally stale) node cache,
// bind eight pods of 4 units at once to one node with a 16-unit GPU: the
// compare-and-swap lets exactly four through, whatever the interleaving.
TEST(BinderReplicas, NeverDoubleBook) {
  testing::FakeApiServer api;
  const sharing::NodeMemory memory = Memory("n1", {{16, 0}});
  api.AddNode(NodeObject("n1", &memory));
  for (int i = 0; i < 8; ++i) {
    api.AddPod(PodObject("p" + std::to_string(i), {4}));
  }
  common::FakeClock clock;
  struct Replica {
    kube::Client client;
    NodeCache cache;
    Binder binder;
    Replica(testing::FakeApiServer& api, common::FakeClock& clock)
        : client(api, clock, {.qps = 0, .max_attempts = 1}),
          binder(client, cache, {.max_conflicts = 50}) {}
  };
  Replica a(api, clock), b(api, clock);
  a.cache.Update(api.Node("n1"));
  b.cache.Update(api.Node("n1"));
  std::vector<absl::Status> results(8);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&, i] {
        const std::string name = "p" + std::to_string(i);
        BindRequest request{.pod_name = name,
                            .pod_namespace = "default",
                            .pod_uid = "uid-" + name,
                            .node = "n1"};
        results[i] = (i % 2 == 0 ? a : b).binder.Bind(request, nullptr);
      });
    }
  }
  int ok = 0;
  for (const absl::Status& s : results) {
    if (s.ok()) {
      ++ok;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      EXPECT_THAT(s.message(), HasSubstr("no longer fits")) << s;
    }
  }
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(api.bindings().size(), 4u);
  absl::StatusOr<NodeView> view = ReadNode(api.Node("n1"));
  ASSERT_TRUE(view.ok());
  ASSERT_TRUE(view->pending_status.ok());
  int64_t units = 0;
  for (const sharing::PendingPod& p : view->pending.pods) {
    EXPECT_TRUE(api.bindings().contains("default/" + p.name)) << p.name;
    for (const auto& c : p.containers) units += c.units;
  }
  EXPECT_EQ(units, 16);
}

// The scheduler binds many pods at once. One binder's writes to one Node
// take turns, so they never conflict with each other: with no retry
// allowed, every pod that fits is recorded and bound.
TEST(BinderReplicas, BindsOfOneReplicaToOneNodeTakeTurns) {
  testing::FakeApiServer api;
  const sharing::NodeMemory memory = Memory("n1", {{16, 0}});
  api.AddNode(NodeObject("n1", &memory));
  for (int i = 0; i < 4; ++i) {
    api.AddPod(PodObject("p" + std::to_string(i), {4}));
  }
  common::FakeClock clock;
  kube::Client client(api, clock, {.qps = 0, .max_attempts = 1});
  NodeCache cache;
  cache.Update(api.Node("n1"));
  Binder binder(client, cache, {.max_conflicts = 0});
  std::vector<absl::Status> results(4);
  std::vector<BindOutcome> outcomes(4);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&, i] {
        const std::string name = "p" + std::to_string(i);
        BindRequest request{.pod_name = name,
                            .pod_namespace = "default",
                            .pod_uid = "uid-" + name,
                            .node = "n1"};
        results[i] = binder.Bind(request, &outcomes[i]);
      });
    }
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(results[i].ok()) << results[i];
    EXPECT_EQ(outcomes[i].conflicts, 0);
  }
  EXPECT_EQ(api.bindings().size(), 4u);
}

}  // namespace
}  // namespace gpulet::extender
