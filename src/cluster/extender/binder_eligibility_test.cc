// The Binder refuses a node kube-scheduler's own filters would not choose
// for the pod (node selector, required node affinity, taints,
// unschedulable), before it writes anything; and its refusals tell the
// caller nothing of the pod beyond the rule and the node.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/cluster/extender/binder.h"
#include "src/cluster/testing/fake_api_server.h"
#include "src/cluster/testing/test_nodes.h"
#include "src/net/testing/fake_transport.h"

namespace gpulet::extender {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Memory;
using testing::NodeObject;
using ::testing::Not;
using testing::PendingEntry;
using testing::PodObject;

constexpr absl::Time kNow = absl::FromUnixSeconds(1795496400);

class BinderEligibilityTest : public ::testing::Test {
 protected:
  BinderEligibilityTest()
      : client_(transport_, clock_, {.qps = 0, .max_attempts = 1}),
        binder_(client_, cache_, {.max_conflicts = 3, .clock = &wall_}) {}

  std::vector<std::string> Calls() const {
    std::vector<std::string> out;
    for (const kube::Request& r : transport_.requests()) {
      out.push_back(r.method + " " + r.path);
    }
    return out;
  }
  // Node n1 with a 16-unit GPU, `pending`, labels zone=a.
  json Node(const sharing::Pending& pending, const std::string& rv) const {
    json node = NodeObject("n1", &memory_, &pending, rv);
    node["metadata"]["labels"] = {{"zone", "a"}};
    return node;
  }
  // The pod p asking for 8 units, with `spec` merged into its spec.
  static json Pod(const json& spec) {
    json pod = PodObject("p", {8});
    pod["spec"].update(spec);
    return pod;
  }

  common::FakeClock clock_;
  common::FakeClock wall_{kNow};  // the pending entries' time
  kube::FakeTransport transport_;
  kube::Client client_;
  NodeCache cache_;
  Binder binder_;
  const sharing::NodeMemory memory_ = Memory("n1", {{16, 4}});
  const BindRequest request_{.pod_name = "p",
                             .pod_namespace = "default",
                             .pod_uid = "uid-p",
                             .node = "n1"};
};

TEST_F(BinderEligibilityTest, RefusesANodeTheSelectorExcludes) {
  transport_.AddResponse(200, Pod({{"nodeSelector", {{"zone", "b"}}}}).dump());
  transport_.AddResponse(200, Node({}, "7").dump());
  absl::Status s = binder_.Bind(request_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "bind pod default/p to node n1: node n1 does not match the pod's "
            "spec.nodeSelector (label zone)");
  EXPECT_THAT(Calls(), ElementsAre("GET /api/v1/namespaces/default/pods/p",
                                   "GET /api/v1/nodes/n1"));
}

TEST_F(BinderEligibilityTest, RefusesPastAffinityTaintsAndCordon) {
  const json excluded = {
      {"affinity",
       {{"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms",
             json::array({{{"matchExpressions",
                            json::array({{{"key", "zone"},
                                          {"operator", "NotIn"},
                                          {"values", {"a"}}}})}}})}}}}}}}};
  json tainted = Node({}, "7");
  tainted["spec"]["taints"] = json::array(
      {{{"key", "dedicated"}, {"value", "x"}, {"effect", "NoSchedule"}}});
  json cordoned = Node({}, "7");
  cordoned["spec"]["unschedulable"] = true;
  const struct {
    json pod, node;
    std::string reason;
  } cases[] = {
      {Pod(excluded), Node({}, "7"),
       "node n1 matches none of the pod's required node affinity terms"},
      {Pod(json::object()), tainted,
       "node n1 has the taint dedicated:NoSchedule, which the pod does not "
       "tolerate"},
      {Pod(json::object()), cordoned, "node n1 is unschedulable"},
  };
  for (const auto& c : cases) {
    transport_.AddResponse(200, c.pod.dump());
    transport_.AddResponse(200, c.node.dump());
    NodeCache cache;  // each case's Node, not the last one's
    Binder binder(client_, cache, {.clock = &wall_});
    absl::Status s = binder.Bind(request_, nullptr);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(s.message(), HasSubstr(c.reason));
  }
  for (const std::string& call : Calls()) {
    EXPECT_THAT(call, ::testing::StartsWith("GET ")) << call;
  }
}

// A pending entry of the pod on the node (an earlier bind) does not let
// a bind to an ineligible node through.
TEST_F(BinderEligibilityTest, AnEntryAlreadyRecordedDoesNotMakeItEligible) {
  transport_.AddResponse(200, Pod({{"nodeSelector", {{"zone", "b"}}}}).dump());
  transport_.AddResponse(
      200, Node({.pods = {PendingEntry("uid-p", {8})}}, "7").dump());
  EXPECT_EQ(binder_.Bind(request_, nullptr).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Calls().size(), 2u);
}

// The cache may be behind the Node's labels: an ineligible cached node is
// read again before the bind is refused.
TEST_F(BinderEligibilityTest, AnIneligibleCachedNodeIsReadAgain) {
  cache_.Update(NodeObject("n1", &memory_, nullptr, "7"));
  transport_.AddResponse(200, Pod({{"nodeSelector", {{"zone", "a"}}}}).dump());
  transport_.AddResponse(200, Node({}, "8").dump());
  transport_.AddResponse(
      200, Node({.pods = {PendingEntry("uid-p", {8})}}, "9").dump());
  transport_.AddResponse(201, "{}");
  ASSERT_TRUE(binder_.Bind(request_, nullptr).ok());
  EXPECT_THAT(Calls(),
              ElementsAre("GET /api/v1/namespaces/default/pods/p",
                          "GET /api/v1/nodes/n1", "PATCH /api/v1/nodes/n1",
                          "POST /api/v1/namespaces/default/pods/p/binding"));
}

TEST_F(BinderEligibilityTest, AnUnknownNodeIsNotKnown) {
  transport_.AddResponse(200, Pod(json::object()).dump());
  transport_.AddResponse(
      404, R"({"kind":"Status","status":"Failure","reason":"NotFound",)"
           R"("code":404,"message":"nodes \"n1\" not found"})");
  absl::Status s = binder_.Bind(request_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "bind pod default/p to node n1: node n1 is not known");
}

TEST_F(BinderEligibilityTest, AnUnreadableNodeIsNotPassedOn) {
  transport_.AddResponse(200, Pod(json::object()).dump());
  transport_.AddResponse(
      500, R"({"kind":"Status","status":"Failure","reason":"InternalError",)"
           R"("code":500,"message":"secret detail"})");
  absl::Status s = binder_.Bind(request_, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), Not(HasSubstr("secret")));
  EXPECT_THAT(s.message(), Not(HasSubstr("/api/v1")));
}

// Against an API server: a pod of another namespace whose selector
// excludes the node is neither recorded on the Node nor bound; the same
// bind of a pod the node suits (selector, affinity on the node's name,
// toleration of its taint) records and binds it.
TEST(BinderEligibilityApiTest, AnExcludedNodeIsNeverWritten) {
  testing::FakeApiServer api;
  const sharing::NodeMemory memory = Memory("n1", {{16, 0}});
  json node = NodeObject("n1", &memory);
  node["metadata"]["labels"] = {{"zone", "a"}};
  node["spec"]["taints"] =
      json::array({{{"key", "gpu"}, {"effect", "NoSchedule"}}});
  api.AddNode(node);
  const json toleration = {{"key", "gpu"}, {"operator", "Exists"}};
  json victim = PodObject("victim", {4});
  victim["metadata"]["namespace"] = "other";
  victim["spec"]["nodeSelector"] = {{"zone", "b"}};
  victim["spec"]["tolerations"] = json::array({toleration});
  api.AddPod(victim);
  json own = PodObject("own", {4});
  own["spec"]["nodeSelector"] = {{"zone", "a"}};
  own["spec"]["tolerations"] = json::array({toleration});
  own["spec"]["affinity"]["nodeAffinity"]
     ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
         json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                     {"operator", "In"},
                                                     {"values", {"n1"}}}})}}});
  api.AddPod(own);
  common::FakeClock clock;
  common::FakeClock wall{kNow};
  kube::Client client(api, clock, {.qps = 0, .max_attempts = 1});
  NodeCache cache;
  Binder binder(client, cache, {.clock = &wall});

  absl::Status s = binder.Bind({.pod_name = "victim",
                                .pod_namespace = "other",
                                .pod_uid = "uid-victim",
                                .node = "n1"},
                               nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("spec.nodeSelector (label zone)"));
  EXPECT_FALSE(api.Node("n1")["metadata"]["annotations"].contains(
      std::string(sharing::kPendingAnnotation)));
  EXPECT_TRUE(api.bindings().empty());

  ASSERT_TRUE(binder
                  .Bind({.pod_name = "own",
                         .pod_namespace = "default",
                         .pod_uid = "uid-own",
                         .node = "n1"},
                        nullptr)
                  .ok());
  EXPECT_EQ(api.bindings().at("default/own"), "n1");
  absl::StatusOr<NodeView> view = ReadNode(api.Node("n1"));
  ASSERT_TRUE(view.ok());
  ASSERT_EQ(view->pending.pods.size(), 1u);
  EXPECT_EQ(view->pending.pods[0].name, "own");
}

}  // namespace
}  // namespace gpulet::extender
