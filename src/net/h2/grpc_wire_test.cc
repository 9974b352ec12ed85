#include "src/net/h2/grpc_wire.h"

#include "gtest/gtest.h"

namespace gpulet::h2 {
namespace {

TEST(GrpcWireTest, ParsesEveryTimeoutUnit) {
  EXPECT_EQ(*ParseTimeout("2H"), std::chrono::hours(2));
  EXPECT_EQ(*ParseTimeout("3M"), std::chrono::minutes(3));
  EXPECT_EQ(*ParseTimeout("10S"), std::chrono::seconds(10));
  EXPECT_EQ(*ParseTimeout("99999999m"), std::chrono::milliseconds(99999999));
  EXPECT_EQ(*ParseTimeout("7u"), std::chrono::microseconds(7));
  EXPECT_EQ(*ParseTimeout("0n"), std::chrono::nanoseconds(0));
}

TEST(GrpcWireTest, RejectsMalformedTimeoutsNamingTheHeader) {
  for (const char* bad : {"", "S", "10", "123456789S", "1x", "-1S", "1 S"}) {
    absl::StatusOr<std::chrono::nanoseconds> t = ParseTimeout(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find("grpc-timeout"), std::string::npos);
  }
}

TEST(GrpcWireTest, FormatsTimeoutsThatParseBack) {
  for (const auto t : {std::chrono::nanoseconds(5),
                       std::chrono::nanoseconds(std::chrono::seconds(10)),
                       std::chrono::nanoseconds(std::chrono::hours(30))}) {
    absl::StatusOr<std::chrono::nanoseconds> back =
        ParseTimeout(FormatTimeout(t));
    ASSERT_TRUE(back.ok()) << FormatTimeout(t);
    EXPECT_GE(*back, t);
  }
}

TEST(GrpcWireTest, PercentEncodingRoundTrips) {
  const std::string message = "bad «id» 100%\r\n\x01";
  const std::string encoded = PercentEncode(message);
  for (const char c : encoded) {
    EXPECT_TRUE(c >= 0x20 && c <= 0x7e) << static_cast<int>(c);
  }
  EXPECT_EQ(PercentDecode(encoded), message);
  EXPECT_EQ(PercentEncode("plain text"), "plain text");
  EXPECT_EQ(PercentDecode("50%"), "50%");  // a malformed escape stays
  EXPECT_EQ(PercentDecode("%zz"), "%zz");
}

TEST(GrpcWireTest, SingleMessageChecksThePrefix) {
  const std::string ok = MessagePrefix(3) + "abc";
  EXPECT_EQ(*SingleMessage(ok), "abc");
  EXPECT_EQ(*SingleMessage(MessagePrefix(0)), "");
  EXPECT_EQ(SingleMessage("").status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(SingleMessage(MessagePrefix(4) + "abc").status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(SingleMessage(ok + "x").status().code(),
            absl::StatusCode::kInternal);
  std::string compressed = ok;
  compressed[0] = 1;
  EXPECT_EQ(SingleMessage(compressed).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(
      SingleMessage(MessagePrefix(11) + "01234567890", 10).status().code(),
      absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace gpulet::h2
