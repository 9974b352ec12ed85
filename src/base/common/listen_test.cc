#include "src/base/common/listen.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::common {
namespace {

using ::testing::HasSubstr;

TEST(ParseListenAddressTest, Table) {
  struct Case {
    std::string in;
    std::string host;
    int port;
  } good[] = {
      {":9400", "", 9400},
      {"127.0.0.1:0", "127.0.0.1", 0},
      {"localhost:65535", "localhost", 65535},
      {"[::1]:80", "::1", 80},
      {"0.0.0.0:9400", "0.0.0.0", 9400},
  };
  for (const Case& c : good) {
    absl::StatusOr<ListenAddress> a = ParseListenAddress(c.in);
    ASSERT_TRUE(a.ok()) << c.in << ": " << a.status();
    EXPECT_EQ(*a, (ListenAddress{c.host, c.port})) << c.in;
  }
  for (const char* bad : {"9400", "host:", "host:x", "host:65536", "host:-1",
                          "::1:80", "[::1:80", "h:123456"}) {
    absl::StatusOr<ListenAddress> a = ParseListenAddress(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(a.status().message(), HasSubstr(bad));
  }
}

TEST(ListenTcpTest, PortZeroBindsAFreePort) {
  UniqueFd fd = ListenTcp("127.0.0.1", 0, 4);
  ASSERT_TRUE(fd.valid());
  EXPECT_GT(BoundPort(fd.get()), 0);
}

TEST(ListenTcpTest, PortInUseFails) {
  UniqueFd first = ListenTcp("127.0.0.1", 0, 4);
  ASSERT_TRUE(first.valid());
  const int port = BoundPort(first.get());
  EXPECT_FALSE(ListenTcp("127.0.0.1", port, 4).valid());
}

TEST(BoundPortTest, NotASocket) { EXPECT_EQ(BoundPort(-1), -1); }

}  // namespace
}  // namespace gpulet::common
