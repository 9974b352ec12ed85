#include "src/net/kube/api_status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/net/kube/list_page.h"

namespace gpulet::kube {
namespace {

using ::testing::HasSubstr;

std::string StatusBody(int code, const std::string& reason,
                       const std::string& message) {
  return absl::StrCat(
      R"({"kind":"Status","apiVersion":"v1","status":"Failure",)",
      R"("message":")", message, R"(","reason":")", reason, R"(","code":)",
      code, "}");
}

TEST(StatusFromResponseTest, MapsCodesAndKeepsTheServersMessage) {
  struct Case {
    int http;
    const char* reason;
    absl::StatusCode want;
  };
  const Case cases[] = {
      {400, "BadRequest", absl::StatusCode::kInvalidArgument},
      {401, "Unauthorized", absl::StatusCode::kUnauthenticated},
      {403, "Forbidden", absl::StatusCode::kPermissionDenied},
      {404, "NotFound", absl::StatusCode::kNotFound},
      {409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
      {409, "Conflict", absl::StatusCode::kAborted},
      {410, "Expired", absl::StatusCode::kFailedPrecondition},
      {422, "Invalid", absl::StatusCode::kInvalidArgument},
      {429, "TooManyRequests", absl::StatusCode::kResourceExhausted},
      {500, "InternalError", absl::StatusCode::kInternal},
      {501, "", absl::StatusCode::kUnimplemented},
      {503, "ServiceUnavailable", absl::StatusCode::kUnavailable},
      {504, "Timeout", absl::StatusCode::kDeadlineExceeded},
      {418, "", absl::StatusCode::kUnknown},
  };
  for (const Case& c : cases) {
    absl::Status status = StatusFromResponse(
        "GET /api/v1/nodes/n1",
        {.status = c.http, .body = StatusBody(c.http, c.reason, "it failed")});
    EXPECT_EQ(status.code(), c.want) << c.http << " " << c.reason;
    EXPECT_EQ(HttpCode(status), c.http);
    EXPECT_EQ(Reason(status), c.reason);
    EXPECT_EQ(IsGone(status), c.http == 410);
    EXPECT_THAT(status.message(),
                HasSubstr(absl::StrCat("GET /api/v1/nodes/n1: ", c.http)));
    EXPECT_THAT(status.message(), HasSubstr(": it failed"));
  }
}

TEST(StatusFromResponseTest, SuccessIsOk) {
  EXPECT_TRUE(StatusFromResponse("x", {.status = 200}).ok());
  EXPECT_TRUE(StatusFromResponse("x", {.status = 201}).ok());
}

TEST(StatusFromResponseTest, NonStatusBodyIsQuotedAndBounded) {
  absl::Status status = StatusFromResponse(
      "GET /x",
      {.status = 502, .body = "bad gateway\n" + std::string(1000, 'z')});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("GET /x: 502: bad gateway\\n"));
  EXPECT_LT(status.message().size(), 400u);
}

TEST(StatusFromResponseTest, RetryAfterInSeconds) {
  absl::Status status = StatusFromResponse(
      "GET /x", {.status = 429, .body = "", .retry_after = " 3 "});
  ASSERT_TRUE(RetryAfter(status).has_value());
  EXPECT_EQ(*RetryAfter(status), absl::Seconds(3));
  status = StatusFromResponse(
      "GET /x",
      {.status = 429, .retry_after = "Wed, 21 Oct 2015 07:28:00 GMT"});
  EXPECT_FALSE(RetryAfter(status).has_value());
  EXPECT_FALSE(RetryAfter(absl::UnavailableError("x")).has_value());
  EXPECT_EQ(HttpCode(absl::UnavailableError("x")), 0);
}

TEST(StatusFromApiStatusTest, WatchErrorEvent) {
  absl::Status status = StatusFromApiStatus(
      "watch pods", nlohmann::json::parse(StatusBody(
                        410, "Expired", "too old resource version: 1 (5)")));
  EXPECT_TRUE(IsGone(status));
  EXPECT_THAT(status.message(), HasSubstr("too old resource version"));
  status = StatusFromApiStatus("watch pods", nlohmann::json::parse("{}"));
  EXPECT_EQ(HttpCode(status), 500);
  status = StatusFromApiStatus("watch pods",
                               nlohmann::json::parse(R"({"code":"x"})"));
  EXPECT_EQ(HttpCode(status), 500);
}

TEST(DecodeObjectTest, OnlyObjects) {
  EXPECT_TRUE(DecodeObject("x", R"({"a":1})").ok());
  EXPECT_EQ(DecodeObject("GET /x", "[1]").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(DecodeObject("GET /x", "{oops").status().message(),
              HasSubstr("GET /x: response is not a JSON object"));
}

TEST(DecodeListPageTest, ItemsVersionAndContinue) {
  absl::StatusOr<ListPage> page = DecodeListPage(
      "GET /api/v1/pods",
      R"({"kind":"PodList","metadata":{"resourceVersion":"42","continue":"c1"},)"
      R"("items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->items.size(), 2u);
  EXPECT_EQ(page->resource_version, "42");
  EXPECT_EQ(page->continue_token, "c1");

  page = DecodeListPage("l", R"({"metadata":{},"items":null})");
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->items.empty());
  EXPECT_THAT(DecodeListPage("l", R"({"items":{}})").status().message(),
              HasSubstr("items is not a list"));
  EXPECT_THAT(DecodeListPage("l", R"({"items":[1]})").status().message(),
              HasSubstr("an item is not an object"));
}

}  // namespace
}  // namespace gpulet::kube
