#include "src/net/http/request.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::http {
namespace {

using ::testing::HasSubstr;

TEST(ParseHead, RequestLineHeadersAndBodyLength) {
  absl::StatusOr<Head> h = ParseHead(
      "POST /gpushare/filter?x=1 HTTP/1.1\r\nHost: a\r\n"
      "Content-Type:  application/json \r\nContent-Length: 12\r\n"
      "Expect: 100-continue",
      100);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->request.method, "POST");
  EXPECT_EQ(h->request.target, "/gpushare/filter?x=1");
  EXPECT_EQ(h->request.path, "/gpushare/filter");
  EXPECT_EQ(h->content_length, 12u);
  EXPECT_TRUE(h->keep_alive);
  EXPECT_TRUE(h->expect_continue);
  ASSERT_NE(h->request.Header("CONTENT-TYPE"), nullptr);
  EXPECT_EQ(*h->request.Header("content-type"), "application/json");
  EXPECT_EQ(h->request.Header("x-missing"), nullptr);
}

TEST(ParseHead, ConnectionHandling) {
  EXPECT_FALSE(ParseHead("GET / HTTP/1.1\r\nConnection: close", 0)->keep_alive);
  EXPECT_FALSE(ParseHead("GET / HTTP/1.0", 0)->keep_alive);
  EXPECT_TRUE(
      ParseHead("GET / HTTP/1.0\r\nConnection: Keep-Alive", 0)->keep_alive);
}

TEST(ParseHead, ErrorsAndTheirStatus) {
  struct Case {
    std::string head;
    int status;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"GET /", 400, "malformed request line"},
      {"GET  / HTTP/1.1", 400, "malformed request line"},
      {"GET / FTP/1.1", 400, "malformed request line"},
      {"GET / HTTP/2.0", 505, "HTTP version HTTP/2.0 is not supported"},
      {"GET / HTTP/1.1\r\nNoColon", 400, "malformed header line 1"},
      {"GET / HTTP/1.1\r\n folded: x", 400, "malformed header line 1"},
      {"POST / HTTP/1.1\r\nContent-Length: -1", 400,
       "Content-Length is not a number"},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2", 400,
       "conflicting Content-Length headers"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked", 411,
       "Transfer-Encoding is not accepted"},
      {"POST / HTTP/1.1\r\nContent-Length: 101", 413,
       "body of 101 bytes is larger than the limit of 100"},
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999", 400,
       "Content-Length is not a number"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Head> h = ParseHead(c.head, 100);
    ASSERT_FALSE(h.ok()) << c.head;
    EXPECT_EQ(StatusCodeFor(h.status()), c.status) << c.head;
    EXPECT_THAT(h.status().message(), HasSubstr(c.want)) << c.head;
  }
}

TEST(FormatResponse, StatusLineHeadersBody) {
  EXPECT_EQ(FormatResponse(TextResponse(413, "too big"), false),
            "HTTP/1.1 413 Content Too Large\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: 8\r\nConnection: close\r\n\r\ntoo big\n");
}

}  // namespace
}  // namespace gpulet::http
