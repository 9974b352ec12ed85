#include "src/net/kube/http_response_parser.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::kube {
namespace {

using ::testing::HasSubstr;

struct Parsed {
  absl::Status status;  // of the last Feed, or of Finish when closed
  int code = 0;
  std::string body;
  bool done = false;
  bool keep_alive = false;
  std::string retry_after;
};

// Feeds `wire` cut into pieces at `cuts`; `close` then ends the connection.
Parsed Parse(const std::string& wire, const std::vector<size_t>& cuts = {},
             bool close = false, size_t max_head = 64 << 10) {
  HttpResponseParser parser(max_head);
  Parsed out;
  const auto sink = [&out](absl::string_view piece) {
    out.body.append(piece.data(), piece.size());
    return true;
  };
  size_t at = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(wire.size());
  for (size_t end : ends) {
    out.status =
        parser.Feed(absl::string_view(wire).substr(at, end - at), sink);
    at = end;
    if (!out.status.ok()) break;
  }
  if (out.status.ok() && close) out.status = parser.Finish();
  out.code = parser.status();
  out.done = parser.done();
  out.keep_alive = parser.keep_alive();
  out.retry_after = parser.retry_after();
  return out;
}

const char kChunked[] =
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
    "Content-Type: application/json\r\n\r\n"
    "5\r\nhello\r\n"
    "7;ext=1\r\n, world\r\n"
    "1\r\n\n\r\n"
    "0\r\nX-Trailer: t\r\n\r\n";

TEST(HttpResponseParserTest, ChunkedBodySplitAtEveryByteBoundary) {
  const std::string wire = kChunked;
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    Parsed p = Parse(wire, {cut});
    ASSERT_TRUE(p.status.ok()) << "cut at " << cut << ": " << p.status;
    EXPECT_TRUE(p.done) << cut;
    EXPECT_EQ(p.body, "hello, world\n") << cut;
    EXPECT_TRUE(p.keep_alive) << cut;
  }
  std::vector<size_t> every;
  for (size_t i = 1; i < wire.size(); ++i) every.push_back(i);
  Parsed bytewise = Parse(wire, every);
  ASSERT_TRUE(bytewise.status.ok()) << bytewise.status;
  EXPECT_EQ(bytewise.body, "hello, world\n");
}

TEST(HttpResponseParserTest, ContentLengthBodyAndHeaders) {
  const std::string wire =
      "HTTP/1.1 429 Too Many Requests\r\nRetry-After:  3 \r\n"
      "Content-Length: 2\r\n\r\n{}";
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    Parsed p = Parse(wire, {cut});
    ASSERT_TRUE(p.status.ok()) << p.status;
    EXPECT_EQ(p.code, 429);
    EXPECT_EQ(p.body, "{}");
    EXPECT_EQ(p.retry_after, "3");
    EXPECT_TRUE(p.done && p.keep_alive);
  }
}

TEST(HttpResponseParserTest, BodyUntilCloseAndConnectionClose) {
  Parsed p = Parse("HTTP/1.1 200 OK\r\n\r\nabc", {}, /*close=*/true);
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.body, "abc");
  EXPECT_TRUE(p.done);
  EXPECT_FALSE(p.keep_alive);

  p = Parse(
      "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
  EXPECT_TRUE(p.done);
  EXPECT_FALSE(p.keep_alive);
  p = Parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
  EXPECT_FALSE(p.keep_alive);
  p = Parse("HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_TRUE(p.done && p.keep_alive);
}

TEST(HttpResponseParserTest, SkipsInterimResponses) {
  Parsed p = Parse(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
      "Content-Length: 1\r\n\r\nx");
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.code, 201);
  EXPECT_EQ(p.body, "x");
}

TEST(HttpResponseParserTest, TruncatedResponsesAreErrors) {
  Parsed p = Parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", {},
                   /*close=*/true);
  EXPECT_EQ(p.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status.message(), HasSubstr("7 bytes of the body"));
  p = Parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", {},
            true);
  EXPECT_THAT(p.status.message(), HasSubstr("inside the chunked body"));
  p = Parse("HTTP/1.1 200 OK\r\nContent-", {}, true);
  EXPECT_THAT(p.status.message(), HasSubstr("inside the response's headers"));
  p = Parse("", {}, true);
  EXPECT_THAT(p.status.message(), HasSubstr("before a response"));
}

TEST(HttpResponseParserTest, MalformedInputIsAnError) {
  for (const char* wire : {
           "HTTP/2 200 OK\r\n\r\n",
           "HTTP/1.1 2000 OK\r\n\r\n",
           "HTTP/1.1 099 Low\r\n\r\n",
           "SSH-2.0-OpenSSH\r\n",
           "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
           "HTTP/1.1 200 OK\r\n folded: x\r\n\r\n",
           "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
           "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
           "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
           "fffffffffffffffff\r\n",
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
           "HTTP/1.1 101 Switching Protocols\r\n\r\n",
       }) {
    Parsed p = Parse(wire);
    EXPECT_EQ(p.status.code(), absl::StatusCode::kInvalidArgument) << wire;
  }
}

TEST(HttpResponseParserTest, OversizedHeadersAndChunkLines) {
  const std::string big_header =
      "HTTP/1.1 200 OK\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n";
  Parsed p = Parse(big_header, {}, false, /*max_head=*/1024);
  EXPECT_EQ(p.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status.message(), HasSubstr("1024 bytes"));
  // Many small header lines count together.
  std::string many = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 100; ++i) many += "X-A: bbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n";
  EXPECT_EQ(Parse(many, {}, false, 1024).status.code(),
            absl::StatusCode::kResourceExhausted);
  const std::string long_chunk_line =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" +
      std::string(HttpResponseParser::kMaxChunkLine, 'e');
  EXPECT_EQ(Parse(long_chunk_line).status.code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(HttpResponseParserTest, ExtraBytesAfterTheResponseEndKeepAlive) {
  Parsed p = Parse("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1");
  ASSERT_TRUE(p.status.ok());
  EXPECT_TRUE(p.done);
  EXPECT_FALSE(p.keep_alive);
}

TEST(HttpResponseParserTest, StopsWhenTheSinkSaysSo) {
  HttpResponseParser parser;
  int calls = 0;
  absl::Status s = parser.Feed(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "1\r\na\r\n1\r\nb\r\n0\r\n\r\n",
      [&](absl::string_view) {
        ++calls;
        return false;
      });
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(parser.stopped());
  EXPECT_FALSE(parser.keep_alive());
  EXPECT_EQ(calls, 1);
}

TEST(HttpResponseParserTest, HeadResponseHasNoBody) {
  HttpResponseParser parser(64 << 10, /*head_request=*/true);
  ASSERT_TRUE(parser
                  .Feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
                        [](absl::string_view) { return true; })
                  .ok());
  EXPECT_TRUE(parser.done());
  EXPECT_TRUE(parser.keep_alive());
}

}  // namespace
}  // namespace gpulet::kube
