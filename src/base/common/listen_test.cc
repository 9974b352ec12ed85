#include "src/base/common/listen.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

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
      {"[::]:80", "::", 80},
      {"0.0.0.0:9400", "0.0.0.0", 9400},
  };
  for (const Case& c : good) {
    absl::StatusOr<ListenAddress> a = ParseListenAddress(c.in);
    ASSERT_TRUE(a.ok()) << c.in << ": " << a.status();
    EXPECT_EQ(*a, (ListenAddress{c.host, c.port})) << c.in;
    EXPECT_EQ(FormatListenAddress(*a), c.in);
  }
  for (const char* bad : {"9400", "host:", "host:x", "host:65536", "host:-1",
                          "::1:80", "[::1:80", "h:123456"}) {
    absl::StatusOr<ListenAddress> a = ParseListenAddress(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(a.status().message(), HasSubstr(bad));
  }
}

// Connects a blocking socket to host:port: a listening socket completes
// the handshake from its backlog, no accept needed.
bool Connects(int family, const char* host, int port) {
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET6, host, &in6->sin6_addr) != 1) return false;
    len = sizeof(*in6);
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&addr);
    in4->sin_family = AF_INET;
    in4->sin_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET, host, &in4->sin_addr) != 1) return false;
    len = sizeof(*in4);
  }
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0;
}

TEST(ListenTcpTest, PortZeroBindsAFreePort) {
  absl::StatusOr<UniqueFd> fd = ListenTcp({"127.0.0.1", 0}, 4);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_GT(BoundPort(fd->get()), 0);
}

// ":port" is every interface of both families: one socket takes IPv4 and
// IPv6 peers.
TEST(ListenTcpTest, EmptyHostTakesIpv4AndIpv6) {
  absl::StatusOr<UniqueFd> fd = ListenTcp({"", 0}, 4);
  ASSERT_TRUE(fd.ok()) << fd.status();
  const int port = BoundPort(fd->get());
  ASSERT_GT(port, 0);
  EXPECT_TRUE(Connects(AF_INET, "127.0.0.1", port));
  EXPECT_TRUE(Connects(AF_INET6, "::1", port));
}

TEST(ListenTcpTest, Ipv6LiteralTakesIpv6Only) {
  absl::StatusOr<ListenAddress> address = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(address.ok());
  absl::StatusOr<UniqueFd> fd = ListenTcp(*address, 4);
  ASSERT_TRUE(fd.ok()) << fd.status();
  const int port = BoundPort(fd->get());
  EXPECT_TRUE(Connects(AF_INET6, "::1", port));
  EXPECT_FALSE(Connects(AF_INET, "127.0.0.1", port));
}

TEST(ListenTcpTest, Ipv4HostTakesIpv4Only) {
  absl::StatusOr<UniqueFd> fd = ListenTcp({"127.0.0.1", 0}, 4);
  ASSERT_TRUE(fd.ok()) << fd.status();
  const int port = BoundPort(fd->get());
  EXPECT_TRUE(Connects(AF_INET, "127.0.0.1", port));
  EXPECT_FALSE(Connects(AF_INET6, "::1", port));
}

TEST(ListenTcpTest, PortInUseNamesTheAddress) {
  absl::StatusOr<UniqueFd> first = ListenTcp({"", 0}, 4);
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = BoundPort(first->get());
  for (const std::string host : {"", "127.0.0.1", "::1"}) {
    absl::StatusOr<UniqueFd> second = ListenTcp({host, port}, 4);
    ASSERT_FALSE(second.ok()) << host;
    EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(second.status().message(),
                HasSubstr(FormatListenAddress({host, port})));
    EXPECT_THAT(second.status().message(), HasSubstr("in use"));
  }
}

TEST(BoundPortTest, NotASocket) { EXPECT_EQ(BoundPort(-1), -1); }

}  // namespace
}  // namespace gpulet::common
