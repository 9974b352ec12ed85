#include "src/net/kube/client.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/net/kube/api_status.h"
#include "src/net/testing/fake_transport.h"

namespace gpulet::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string StatusBody(int code, const std::string& reason) {
  return absl::StrCat(R"({"kind":"Status","status":"Failure","message":"m",)",
                      R"("reason":")", reason, R"(","code":)", code, "}");
}

std::string Event(const std::string& type, const std::string& name,
                  const std::string& rv) {
  return absl::StrCat(R"({"type":")", type,
                      R"(","object":{"kind":"Pod","metadata":{"name":")", name,
                      R"(","resourceVersion":")", rv, R"("}}})", "\n");
}

class ClientTest : public ::testing::Test {
 protected:
  ClientTest()
      : client_(transport_, clock_,
                {.qps = 0,
                 .max_attempts = 4,
                 .backoff = {.initial = absl::Milliseconds(100),
                             .max = absl::Seconds(1),
                             .jitter = 0},
                 .page_size = 2}) {}

  std::vector<std::string> Paths() const {
    std::vector<std::string> out;
    for (const Request& r : transport_.requests()) {
      out.push_back(r.method + " " + r.path);
    }
    return out;
  }

  common::FakeClock clock_;
  FakeTransport transport_;
  Client client_;
};

TEST_F(ClientTest, GetDecodesTheObject) {
  transport_.AddResponse(200, R"({"kind":"Node","metadata":{"name":"n1"}})");
  absl::StatusOr<nlohmann::json> node = client_.Get("/api/v1/nodes/n1");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["metadata"]["name"], "n1");
  EXPECT_THAT(Paths(), ElementsAre("GET /api/v1/nodes/n1"));
}

TEST_F(ClientTest, GetReportsTheServersStatusWithoutRetrying) {
  transport_.AddResponse(404, StatusBody(404, "NotFound"));
  absl::StatusOr<nlohmann::json> node = client_.Get("/api/v1/nodes/n9");
  EXPECT_EQ(node.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(node.status().message(),
              HasSubstr("GET /api/v1/nodes/n9: 404 NotFound: m"));
  EXPECT_EQ(transport_.requests().size(), 1u);
}

TEST_F(ClientTest, RetriesRetriableFailuresWithBackoff) {
  transport_.AddError(absl::UnavailableError("connection refused"));
  transport_.AddResponse(503, StatusBody(503, "ServiceUnavailable"));
  transport_.AddResponse(429, StatusBody(429, "TooManyRequests"), "7");
  transport_.AddResponse(200, "{}");
  EXPECT_TRUE(client_.Get("/api/v1/nodes/n1").ok());
  EXPECT_EQ(transport_.requests().size(), 4u);
  // Exponential for the first two, then the server's Retry-After.
  EXPECT_THAT(clock_.sleeps(),
              ElementsAre(absl::Milliseconds(100), absl::Milliseconds(200),
                          absl::Seconds(7)));
}

TEST_F(ClientTest, GivesUpAfterMaxAttempts) {
  for (int i = 0; i < 4; ++i) {
    transport_.AddResponse(500, StatusBody(500, "InternalError"));
  }
  absl::StatusOr<nlohmann::json> got = client_.Get("/x");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(transport_.requests().size(), 4u);
  EXPECT_EQ(transport_.pending(), 0u);
}

TEST_F(ClientTest, CreateRetriesOnlyTooManyRequests) {
  transport_.AddResponse(429, StatusBody(429, "TooManyRequests"));
  transport_.AddResponse(503, StatusBody(503, "ServiceUnavailable"));
  absl::StatusOr<nlohmann::json> got = client_.Create(
      "/api/v1/namespaces/ns/pods/p/binding",
      {{"kind", "Binding"}, {"target", {{"kind", "Node"}, {"name", "n1"}}}});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(transport_.requests().size(), 2u);
  const Request r = transport_.requests()[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(nlohmann::json::parse(r.body)["target"]["name"], "n1");

  transport_.AddError(absl::UnavailableError("reset"));
  EXPECT_EQ(client_.Create("/p", {}).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(transport_.requests().size(), 3u);
}

TEST_F(ClientTest, CreateAlreadyExists) {
  transport_.AddResponse(409, StatusBody(409, "AlreadyExists"));
  EXPECT_EQ(client_.Create("/p", {}).status().code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_F(ClientTest, ReplaceIsNotRepeatedAfterAServerError) {
  transport_.AddResponse(429, StatusBody(429, "TooManyRequests"));
  transport_.AddResponse(200, R"({"metadata":{"resourceVersion":"8"}})");
  absl::StatusOr<nlohmann::json> got = client_.Replace(
      "/apis/resource.k8s.io/v1/resourceslices/s",
      {{"metadata", {{"name", "s"}, {"resourceVersion", "7"}}}});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["metadata"]["resourceVersion"], "8");
  ASSERT_EQ(transport_.requests().size(), 2u);
  const Request r = transport_.requests()[1];
  EXPECT_EQ(r.method, "PUT");
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(nlohmann::json::parse(r.body)["metadata"]["resourceVersion"], "7");

  transport_.AddResponse(503, StatusBody(503, "ServiceUnavailable"));
  EXPECT_EQ(client_.Replace("/p", {}).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(transport_.requests().size(), 3u);
  transport_.AddResponse(409, StatusBody(409, "Conflict"));
  EXPECT_EQ(client_.Replace("/p", {}).status().code(),
            absl::StatusCode::kAborted);
}

TEST_F(ClientTest, DeleteIsRepeatedAfterAServerError) {
  transport_.AddResponse(503, StatusBody(503, "ServiceUnavailable"));
  transport_.AddResponse(200, R"({"kind":"Status","status":"Success"})");
  EXPECT_TRUE(client_.Delete("/apis/resource.k8s.io/v1/resourceslices/s").ok());
  ASSERT_EQ(transport_.requests().size(), 2u);
  EXPECT_EQ(transport_.requests()[1].method, "DELETE");
  transport_.AddResponse(404, StatusBody(404, "NotFound"));
  EXPECT_EQ(client_.Delete("/p").code(), absl::StatusCode::kNotFound);
}

TEST_F(ClientTest, MergePatchSendsTheRightContentType) {
  transport_.AddResponse(200, R"({"metadata":{"annotations":{"a":"1"}}})");
  nlohmann::json patch = {{"metadata", {{"annotations", {{"a", "1"}}}}}};
  absl::StatusOr<nlohmann::json> node =
      client_.MergePatch("/api/v1/nodes/n1", patch);
  ASSERT_TRUE(node.ok()) << node.status();
  const Request r = transport_.requests()[0];
  EXPECT_EQ(r.method, "PATCH");
  EXPECT_EQ(r.content_type, "application/merge-patch+json");
  EXPECT_EQ(nlohmann::json::parse(r.body), patch);
}

TEST_F(ClientTest, ListFollowsContinueTokens) {
  transport_.AddResponse(
      200, R"({"metadata":{"resourceVersion":"10","continue":"c 1"},)"
           R"("items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  transport_.AddResponse(
      200,
      R"({"metadata":{"resourceVersion":"11"},"items":[{"metadata":{"name":"c"}}]})");
  absl::StatusOr<ListResult> list = client_.List(
      "/api/v1/pods",
      {.field_selector = "spec.nodeName=n1", .resource_version = "0"});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->items.size(), 3u);
  EXPECT_EQ(list->resource_version, "11");
  EXPECT_THAT(Paths(),
              ElementsAre("GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1&"
                          "limit=2&resourceVersion=0",
                          "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1&"
                          "limit=2&continue=c%201"));
}

TEST_F(ClientTest, ListStartsOverWithoutPagingWhenTheContinueTokenExpires) {
  transport_.AddResponse(
      200,
      R"({"metadata":{"resourceVersion":"10","continue":"c1"},"items":[{}]})");
  transport_.AddResponse(410, StatusBody(410, "Expired"));
  transport_.AddResponse(
      200, R"({"metadata":{"resourceVersion":"20"},"items":[{},{},{}]})");
  absl::StatusOr<ListResult> list = client_.List("/api/v1/pods", {});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->items.size(), 3u);
  EXPECT_EQ(list->resource_version, "20");
  EXPECT_EQ(Paths().back(), "GET /api/v1/pods");
}

// With a limit, a list at a given version reads exactly that version from
// etcd; without one, anything at least as new, from the watch cache.
TEST_F(ClientTest, ListAtAVersionIsNotPaged) {
  transport_.AddResponse(200, R"({"metadata":{"resourceVersion":"12"}})");
  ASSERT_TRUE(client_.List("/api/v1/pods", {.resource_version = "10"}).ok());
  EXPECT_THAT(Paths(), ElementsAre("GET /api/v1/pods?resourceVersion=10"));
}

// The server has not caught up with the version asked for: the caller
// reads at another one rather than wait through retries.
TEST_F(ClientTest, TooLargeResourceVersionIsNotRetried) {
  transport_.AddResponse(
      504, R"({"kind":"Status","code":504,"reason":"Timeout","message":)"
           R"("Too large resource version: 10, current: 9","details":)"
           R"({"causes":[{"reason":"ResourceVersionTooLarge"}]}})");
  absl::StatusOr<ListResult> list =
      client_.List("/api/v1/pods", {.resource_version = "10"});
  EXPECT_TRUE(IsResourceVersionTooLarge(list.status())) << list.status();
  EXPECT_EQ(Paths().size(), 1u);
  // A plain 504 is retried as before.
  transport_.AddResponse(504, StatusBody(504, "Timeout"));
  transport_.AddResponse(200, R"({"metadata":{"resourceVersion":"12"}})");
  list = client_.List("/api/v1/pods", {.resource_version = "10"});
  EXPECT_TRUE(list.ok()) << list.status();
  EXPECT_FALSE(
      IsResourceVersionTooLarge(absl::DeadlineExceededError("no payload")));
}

TEST_F(ClientTest, WatchDeliversEventsAcrossChunks) {
  const std::string stream = Event("ADDED", "a", "11") +
                             Event("BOOKMARK", "", "12") +
                             Event("DELETED", "a", "13");
  transport_.AddStream(
      {stream.substr(0, 30), stream.substr(30, 100), stream.substr(130)});
  std::vector<std::string> seen;
  absl::Status status = client_.Watch(
      "/api/v1/pods",
      {.field_selector = "spec.nodeName=n1", .resource_version = "10"},
      [&](const WatchEvent& e) {
        seen.push_back(absl::StrCat(EventTypeName(e.type), " ",
                                    ResourceVersionOf(e.object)));
        return true;
      });
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_THAT(seen, ElementsAre("ADDED 11", "BOOKMARK 12", "DELETED 13"));
  EXPECT_THAT(Paths(),
              ElementsAre("GET /api/v1/pods?watch=true&fieldSelector=spec."
                          "nodeName%3Dn1&resourceVersion=10&"
                          "allowWatchBookmarks=true&timeoutSeconds=300"));
}

TEST_F(ClientTest, WatchAsksTheTransportForTheIdleTimeout) {
  transport_.AddStream({Event("ADDED", "a", "11")});
  EXPECT_TRUE(client_.Watch("/p", {}, [](const auto&) { return true; }).ok());
  transport_.AddResponse(200, "{}");
  EXPECT_TRUE(client_.Get("/p").ok());
  const std::vector<Request> requests = transport_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].idle_timeout, kWatchIdleTimeout);
  EXPECT_EQ(requests[1].idle_timeout, absl::InfiniteDuration());
}

TEST_F(ClientTest, WatchErrorEventEndsTheWatchAsGone) {
  transport_.AddStream(
      {Event("ADDED", "a", "11"),
       R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})"
       "\n",
       Event("ADDED", "b", "12")});
  int seen = 0;
  absl::Status status = client_.Watch("/api/v1/pods", {}, [&](const auto&) {
    ++seen;
    return true;
  });
  EXPECT_TRUE(IsGone(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("too old"));
  EXPECT_EQ(seen, 1);
}

TEST_F(ClientTest, WatchRefusedAndGarbled) {
  transport_.AddStream({}, 403);
  EXPECT_EQ(client_.Watch("/p", {}, [](const auto&) { return true; }).code(),
            absl::StatusCode::kPermissionDenied);
  transport_.AddStream({Event("ADDED", "a", "1"), "{garbage\n"});
  EXPECT_EQ(client_.Watch("/p", {}, [](const auto&) { return true; }).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ClientTest, WatchRefusedWithGone) {
  transport_.AddResponse(410, StatusBody(410, "Gone"));
  absl::Status status = client_.Watch("/p", {.resource_version = "1"},
                                      [](const auto&) { return true; });
  EXPECT_TRUE(IsGone(status)) << status;
}

TEST_F(ClientTest, WatchEndsWhenTheCallerSaysSo) {
  transport_.AddStream({Event("ADDED", "a", "1") + Event("ADDED", "b", "2"),
                        Event("ADDED", "c", "3")});
  int seen = 0;
  EXPECT_TRUE(
      client_.Watch("/p", {}, [&](const auto&) { return ++seen < 2; }).ok());
  EXPECT_EQ(seen, 2);
}

TEST_F(ClientTest, StopEndsWaitsAndWatches) {
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(client_.Get("/x", stop.get_token()).status().code(),
            absl::StatusCode::kCancelled);
  EXPECT_TRUE(transport_.requests().empty());
}

TEST(ClientLimiterTest, RequestsWaitForTheLimiter) {
  common::FakeClock clock;
  FakeTransport transport;
  Client client(transport, clock, {.qps = 10, .burst = 2});
  for (int i = 0; i < 4; ++i) transport.AddResponse(200, "{}");
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(client.Get("/x").ok());
  // Two from the burst, then one every 100 ms of (fake) time.
  EXPECT_THAT(clock.sleeps(),
              ElementsAre(absl::Milliseconds(100), absl::Milliseconds(100)));
}

}  // namespace
}  // namespace gpulet::kube
