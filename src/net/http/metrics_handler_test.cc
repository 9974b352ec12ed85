// The metrics endpoint (MetricsHandler on a Server with
// MetricsServerOptions) over a real TCP socket on loopback, scraped with a
// plain socket HTTP/1.0 request so the test does not trust the server's own
// library.
#include "src/net/http/metrics_handler.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "src/base/metrics/registry.h"
#include "src/net/http/server.h"

namespace gpulet::http {
namespace {

using metrics::GpuletMetrics;
using metrics::Registry;

using ::testing::HasSubstr;
using ::testing::StartsWith;

absl::StatusOr<std::unique_ptr<Server>> StartMetrics(const std::string& address,
                                                     const Registry& registry) {
  return Server::Start(MetricsServerOptions(address), MetricsHandler(registry));
}

// The whole response (status line, headers, body) to "<method> <path>",
// sent to the loopback address of `family`.
std::string HttpRequest(int port, const std::string& method,
                        const std::string& path, int family = AF_INET) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "socket failed";
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(port));
    in6->sin6_addr = in6addr_loopback;
    len = sizeof(*in6);
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&addr);
    in4->sin_family = AF_INET;
    in4->sin_port = htons(static_cast<uint16_t>(port));
    in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof(*in4);
  }
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
    const std::string request =
        method + " " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (::write(fd, request.data(), request.size()) ==
        static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof(buf))) > 0) response.append(buf, n);
    }
  } else {
    response = "connect failed";
  }
  ::close(fd);
  return response;
}

std::string HttpGet(int port, const std::string& path) {
  return HttpRequest(port, "GET", path);
}

TEST(MetricsServerTest, BadAddressNamesTheMetricsAddress) {
  Registry registry;
  for (const char* bad : {"9400", "host:x", "[::1:80"}) {
    absl::StatusOr<std::unique_ptr<Server>> server =
        StartMetrics(bad, registry);
    ASSERT_FALSE(server.ok()) << bad;
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(server.status().message()),
                StartsWith(std::string("metrics address \"") + bad));
  }
}

TEST(MetricsServerTest, ServesMetricsAndHealthz) {
  Registry registry;
  GpuletMetrics m = *GpuletMetrics::Register(registry);
  m.xid_events->Add({"GPU-0", "48"});
  absl::StatusOr<std::unique_ptr<Server>> server =
      StartMetrics("127.0.0.1:0", registry);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);

  const std::string metrics = HttpGet(port, "/metrics");
  EXPECT_THAT(metrics, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(metrics, HasSubstr("Content-Type: text/plain; version=0.0.4; "
                                 "charset=utf-8\r\n"));
  EXPECT_THAT(metrics, HasSubstr("\r\n\r\n# HELP gpulet_allocated_devices"));
  EXPECT_THAT(metrics,
              HasSubstr("gpulet_xid_events_total{gpu=\"GPU-0\",xid=\"48\"} "
                        "1\n"));

  m.xid_events->Add({"GPU-0", "48"});
  EXPECT_THAT(HttpGet(port, "/metrics"),
              HasSubstr("gpulet_xid_events_total{gpu=\"GPU-0\",xid=\"48\"} "
                        "2\n"));
  const std::string healthz = HttpGet(port, "/healthz");
  EXPECT_THAT(healthz, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(healthz, HasSubstr("\r\n\r\nok\n"));
  EXPECT_THAT(HttpGet(port, "/other"), StartsWith("HTTP/1.1 404"));
}

TEST(MetricsServerTest, WrongMethodIs405AndUnknownPathIs404) {
  Registry registry;
  absl::StatusOr<std::unique_ptr<Server>> server =
      StartMetrics("127.0.0.1:0", registry);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  EXPECT_THAT(HttpRequest(port, "POST", "/metrics"),
              StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(HttpRequest(port, "DELETE", "/healthz"),
              StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(HttpRequest(port, "GET", "/metrics/x"),
              StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(HttpRequest(port, "POST", "/filter"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(HttpRequest(port, "GET", "/metrics?x=1"),
              StartsWith("HTTP/1.1 200"));
}

// ":port" serves every interface of both families.
TEST(MetricsServerTest, EmptyHostIsScrapedOverIpv4AndIpv6) {
  Registry registry;
  absl::StatusOr<std::unique_ptr<Server>> server = StartMetrics(":0", registry);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  EXPECT_THAT(HttpRequest(port, "GET", "/healthz", AF_INET),
              StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(HttpRequest(port, "GET", "/healthz", AF_INET6),
              StartsWith("HTTP/1.1 200"));
}

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A client trickling its request one byte at a time (the old server gave
// each read 2 s, so such a client held its only thread for as long as it
// liked) neither delays other scrapes nor keeps its connection past the
// whole-request deadline.
// A server of the gpulet metrics on a free loopback port.
class ServedMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(GpuletMetrics::Register(registry_).ok());
    absl::StatusOr<std::unique_ptr<Server>> server =
        StartMetrics("127.0.0.1:0", registry_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    port_ = server_->port();
  }
  Registry registry_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
};

TEST_F(ServedMetricsTest, ASlowClientDelaysNobodyAndIsCutOff) {
  const int port = port_;
  std::atomic<bool> scraped{false};
  std::atomic<bool> scraped_while_trickling{false};
  std::atomic<bool> cut_off{false};
  std::thread trickler([&] {
    const int fd = Connect(port);
    if (fd < 0) return;
    const std::string request = "GET /metrics HTTP/1.0\r\nX-Slow: ";
    // Bounded: 60 s of trickling at most, long after the 5 s deadline.
    for (int i = 0; i < 600; ++i) {
      if (::send(fd, request.data() + (i % request.size()), 1, MSG_NOSIGNAL) !=
          1) {
        cut_off = true;
        break;
      }
      if (scraped && !scraped_while_trickling) scraped_while_trickling = true;
      absl::SleepFor(absl::Milliseconds(100));
    }
    ::close(fd);
  });
  // Give the trickler its connection first (a condition: the server has a
  // client), then scrape.
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_THAT(HttpGet(port, "/metrics"), StartsWith("HTTP/1.1 200 OK\r\n"));
  scraped = true;
  trickler.join();
  EXPECT_TRUE(scraped_while_trickling);
  EXPECT_TRUE(cut_off) << "the server kept a trickling client for 60 s";
}

// More clients than connection slots are served in turn, none refused.
TEST_F(ServedMetricsTest, ManyClientsAreAllServed) {
  const int port = port_;
  std::vector<int> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(Connect(port));
  EXPECT_THAT(HttpGet(port, "/healthz"), HasSubstr("\r\n\r\nok\n"));
  for (int fd : idle) ::close(fd);
}

TEST(MetricsServerTest, PortInUseIsUnavailable) {
  Registry registry;
  absl::StatusOr<std::unique_ptr<Server>> first =
      StartMetrics("127.0.0.1:0", registry);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  absl::StatusOr<std::unique_ptr<Server>> second =
      StartMetrics(taken, registry);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr(taken));
}

TEST(MetricsServerTest, MalformedAddressIsInvalid) {
  Registry registry;
  absl::StatusOr<std::unique_ptr<Server>> server =
      StartMetrics("no-port", registry);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MetricsServerTest, StartsAndStopsRepeatedly) {
  Registry registry;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<std::unique_ptr<Server>> server =
        StartMetrics("127.0.0.1:0", registry);
    ASSERT_TRUE(server.ok()) << server.status();
  }
}

}  // namespace
}  // namespace gpulet::http
