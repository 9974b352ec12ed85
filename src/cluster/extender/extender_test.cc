#include "src/cluster/extender/extender.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/cluster/testing/test_nodes.h"
#include "src/net/testing/fake_transport.h"

namespace gpulet::extender {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::Memory;
using testing::NodeObject;
using testing::PendingEntry;
using testing::PodObject;

class ExtenderTest : public ::testing::Test {
 protected:
  ExtenderTest()
      : client_(transport_, clock_, {.qps = 0, .max_attempts = 1}),
        binder_(client_, cache_, {}),
        extender_(cache_, binder_, registry_, {}) {
    const sharing::NodeMemory big = Memory("big", {{16, 0}, {16, 0}});
    const sharing::NodeMemory busy = Memory("busy", {{16, 6}, {16, 8}});
    const sharing::NodeMemory half = Memory("half", {{16, 8}});
    cache_.Replace({NodeObject("big", &big), NodeObject("busy", &busy),
                    NodeObject("half", &half), NodeObject("cpu", nullptr)});
  }

  http::Response Post(const std::string& path, const std::string& body) {
    http::Request r;
    r.method = "POST";
    r.path = path;
    r.target = path;
    r.version = "HTTP/1.1";
    r.body = body;
    return extender_.Handle(r);
  }
  http::Response Get(const std::string& path) {
    http::Request r;
    r.method = "GET";
    r.path = path;
    r.target = path;
    r.version = "HTTP/1.1";
    return extender_.Handle(r);
  }
  static json Args(const json& pod, std::vector<std::string> names) {
    return {{"Pod", pod}, {"NodeNames", names}};
  }

  common::FakeClock clock_;
  kube::FakeTransport transport_;
  kube::Client client_;
  NodeCache cache_;
  Binder binder_;
  metrics::Registry registry_;
  Extender extender_;
};

TEST_F(ExtenderTest, FilterSplitsNodesWithReasons) {
  absl::StatusOr<json> r = extender_.Filter(
      Args(PodObject("p", {12}), {"big", "busy", "cpu", "gone"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)["NodeNames"], json({"big"}));
  EXPECT_TRUE((*r)["Nodes"].is_null());
  EXPECT_EQ((*r)["Error"], "");
  EXPECT_EQ((*r)["FailedNodes"]["busy"],
            "no single GPU on node busy has 12 GiB free (largest free: 10 GiB "
            "on GPU-busy-0)");
  EXPECT_THAT((*r)["FailedNodes"]["gone"].get<std::string>(),
              HasSubstr("not in the GPU-memory extender's node cache"));
  EXPECT_THAT((*r)["FailedAndUnresolvableNodes"]["cpu"].get<std::string>(),
              HasSubstr("has no gpulet.dev/gpu-memory annotation"));
}

TEST_F(ExtenderTest, FilterWithANodeListUsesItsAnnotationsForUnknownNodes) {
  const sharing::NodeMemory fresh = Memory("fresh", {{16, 0}});
  json args = {
      {"pod", PodObject("p", {4})},
      {"nodes",
       {{"items",
         {NodeObject("fresh", &fresh), NodeObject("busy", nullptr)}}}}};
  absl::StatusOr<json> r = extender_.Filter(args);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ((*r)["Nodes"]["items"].size(), 2u);  // busy: the cache's view
  EXPECT_EQ((*r)["Nodes"]["items"][0]["metadata"]["name"], "fresh");
  EXPECT_TRUE((*r)["NodeNames"].is_null());
}

TEST_F(ExtenderTest, KeysMatchIgnoringCaseAsGoDoes) {
  json args = {{"POD", PodObject("p", {4})}, {"nodenames", {"half"}}};
  absl::StatusOr<json> r = extender_.Filter(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)["NodeNames"], json({"half"}));
}

TEST_F(ExtenderTest, PodProblemsGoToTheErrorField) {
  absl::StatusOr<json> r =
      extender_.Filter(Args(PodObject("p", {4}, "tight"), {"big"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT((*r)["Error"].get<std::string>(),
              HasSubstr("ExtenderArgs.Pod.metadata.annotations[gpulet.dev/"
                        "gpu-memory-policy]: \"tight\" is not a policy"));
  EXPECT_EQ((*r)["NodeNames"], json::array());
}

TEST_F(ExtenderTest, PodWithoutRequestPassesEveryNode) {
  absl::StatusOr<json> r =
      extender_.Filter(Args(PodObject("p", {0}), {"big", "cpu"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["NodeNames"], json({"big", "cpu"}));
}

TEST_F(ExtenderTest, PrioritizeFollowsThePolicy) {
  absl::StatusOr<json> binpack =
      extender_.Prioritize(Args(PodObject("p", {4}), {"big", "half", "cpu"}));
  ASSERT_TRUE(binpack.ok());
  EXPECT_EQ(*binpack, json::parse(R"([{"Host":"big","Score":1},)"
                                  R"({"Host":"half","Score":8},)"
                                  R"({"Host":"cpu","Score":0}])"));
  absl::StatusOr<json> spread = extender_.Prioritize(
      Args(PodObject("p", {4}, "spread"), {"big", "half"}));
  ASSERT_TRUE(spread.ok());
  EXPECT_EQ(*spread, json::parse(R"([{"Host":"big","Score":9},)"
                                 R"({"Host":"half","Score":3}])"));
}

TEST_F(ExtenderTest, MalformedRequestsAre400NamingTheField) {
  struct Case {
    std::string path, body, want;
  };
  const std::vector<Case> cases = {
      {"/filter", "{", "filter: the request body is not JSON"},
      {"/filter", std::string(100, '[') + std::string(100, ']'),
       "filter: the request body nests deeper than 64 levels"},
      {"/filter", R"({"Pod":{"metadata":{"name":"[[[["}},"NodeNames":[]})", ""},
      {"/filter", "[]", "filter: ExtenderArgs: not a JSON object"},
      {"/filter", R"({"NodeNames":["a"]})",
       "filter: ExtenderArgs.Pod: missing"},
      {"/filter", R"({"Pod":{}})",
       "filter: ExtenderArgs: neither NodeNames nor Nodes given"},
      {"/prioritize", R"({"Pod":{},"NodeNames":[1]})",
       "prioritize: ExtenderArgs.NodeNames[0]: not a string"},
      {"/filter", R"({"Pod":{},"Nodes":{"items":[{}]}})",
       "filter: ExtenderArgs.Nodes.items[0].metadata.name: missing"},
      {"/bind", R"({"PodName":"p"})",
       "bind: ExtenderBindingArgs.Node: missing"},
      {"/bind", R"({"PodName":7,"Node":"n"})",
       "bind: ExtenderBindingArgs.PodName: not a string"},
      {"/bind", R"({"PodName":"p","Node":"n"})",
       "bind: ExtenderBindingArgs.PodUID: missing"},
      {"/bind",
       R"({"PodName":"p","PodNamespace":"a.b","PodUID":"u","Node":"n"})",
       "bind: ExtenderBindingArgs.PodNamespace: \"a.b\" is not a valid"},
      {"/bind", R"({"PodName":"P","PodUID":"u","Node":"n"})",
       "bind: ExtenderBindingArgs.PodName: \"P\" is not a valid"},
      {"/bind", R"({"PodName":"p","PodUID":"u","Node":"../n"})",
       "bind: ExtenderBindingArgs.Node: \"../n\" is not a valid"},
      {"/filter", R"({"Pod":{},"NodeNames":["big","Big"]})",
       "filter: ExtenderArgs.NodeNames[1]: \"Big\" is not a valid"},
      {"/filter",
       R"({"Pod":{},"Nodes":{"items":[{"metadata":{"name":"a_b"}}]}})",
       "filter: ExtenderArgs.Nodes.items[0].metadata.name: \"a_b\" is not"},
  };
  for (const Case& c : cases) {
    http::Response r = Post(c.path, c.body);
    if (c.want.empty()) {  // brackets inside strings do not nest
      EXPECT_EQ(r.status, 200) << c.body << ": " << r.body;
      continue;
    }
    EXPECT_EQ(r.status, 400) << c.body;
    EXPECT_THAT(r.body, HasSubstr(c.want)) << c.body;
  }
  EXPECT_EQ(Get("/filter").status, 405);
  EXPECT_EQ(Post("/unknown", "{}").status, 404);
}

TEST_F(ExtenderTest, BindAnswersErrorsInTheResult) {
  transport_.AddResponse(
      404, R"({"kind":"Status","status":"Failure","reason":"NotFound",)"
           R"("code":404,"message":"pods \"p\" not found"})");
  http::Response r = Post(
      "/gpushare/bind",
      R"({"PodName":"p","PodNamespace":"default","PodUID":"u","Node":"big"})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(json::parse(r.body)["Error"].get<std::string>(),
            std::string("bind pod default/p: ") + kNotPlacedHere);
}

TEST_F(ExtenderTest, RequestsNamingTooManyNodesAre400) {
  json names = json::array();
  for (size_t i = 0; i <= kMaxNodes; ++i) names.push_back("n");
  http::Response r =
      Post("/filter",
           json{{"Pod", PodObject("p", {1})}, {"NodeNames", names}}.dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("ExtenderArgs.NodeNames: 15001 nodes, more "
                                "than the 15000 one request may name"));
}

// A filter call cannot change what bind believes about a pod: bind reads
// the pod itself. Before, filter remembered the first copy it saw by uid
// and bind used it, so a caller could book fewer units than the pod uses.
TEST_F(ExtenderTest, FilterCannotSubstituteAPodsSizes) {
  json forged = PodObject("p", {1});  // the real pod asks for 12
  ASSERT_EQ(Post("/filter", Args(forged, {"big"}).dump()).status, 200);
  transport_.AddResponse(200, PodObject("p", {12}).dump());
  const sharing::NodeMemory big = Memory("big", {{16, 0}, {16, 0}});
  const sharing::Pending after{.pods = {PendingEntry("uid-p", {12})}};
  // The cache's copy of the node is current: the PATCH is the next call.
  transport_.AddResponse(200, NodeObject("big", &big, &after, "101").dump());
  transport_.AddResponse(201, "{}");
  http::Response r = Post(
      "/bind",
      R"({"PodName":"p","PodNamespace":"default","PodUID":"uid-p","Node":"big"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["Error"], "");
  ASSERT_EQ(transport_.requests().size(), 3u);
  EXPECT_EQ(transport_.requests()[0].path, "/api/v1/namespaces/default/pods/p");
  EXPECT_EQ(transport_.requests()[1].method, "PATCH");
  const json patch = json::parse(transport_.requests()[1].body);
  EXPECT_THAT(patch.dump(), HasSubstr(R"(\"units\":12)"));
}

TEST_F(ExtenderTest, HealthReadinessAndMetrics) {
  EXPECT_EQ(Get("/healthz").status, 200);
  EXPECT_EQ(Get("/readyz").status, 200);
  Post("/filter", Args(PodObject("p", {12}), {"big", "busy"}).dump());
  http::Response m = Get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_THAT(m.body,
              HasSubstr("gpulet_extender_requests_total{verb=\"filter\","
                        "code=\"200\"} 1"));
  EXPECT_THAT(
      m.body,
      HasSubstr("gpulet_extender_filtered_nodes_total{result=\"fit\"} 1"));
  EXPECT_THAT(m.body, HasSubstr("gpulet_extender_nodes 4"));
}

TEST(ExtenderReady, NotReadyBeforeTheFirstList) {
  common::FakeClock clock;
  kube::FakeTransport transport;
  kube::Client client(transport, clock, {.qps = 0});
  NodeCache cache;
  Binder binder(client, cache, {});
  metrics::Registry registry;
  Extender extender(cache, binder, registry, {});
  http::Request r;
  r.method = "GET";
  r.path = "/readyz";
  EXPECT_EQ(extender.Handle(r).status, 503);
}

TEST(GoField, ExactMatchFirstThenAnyCase) {
  const json object = {{"pod", 1}, {"Pod", 2}, {"NODES", 3}, {"Gone", nullptr}};
  ASSERT_NE(GoField(object, "Pod"), nullptr);
  EXPECT_EQ(*GoField(object, "Pod"), 2);
  EXPECT_EQ(*GoField(object, "Nodes"), 3);
  EXPECT_EQ(GoField(object, "Gone"), nullptr);
  EXPECT_EQ(GoField(object, "Missing"), nullptr);
}

}  // namespace
}  // namespace gpulet::extender
