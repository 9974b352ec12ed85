// A watch over the real TLS transport against a server that goes silent
// with the socket open (raw_tls_server.h): the idle timeout ends it, naming
// itself; bookmarks keep a quiet watch alive; ListWatcher resumes from the
// last version it saw. Time is a FakeClock the test moves from inside the
// watch's callbacks, so nothing waits for real time to pass. Also: the
// keepalive options on the connection's socket.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <mutex>
#include <semaphore>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/net/kube/api_status.h"
#include "src/net/kube/list_watcher.h"
#include "src/net/kube/tls_client_context.h"
#include "src/net/kube/tls_connection.h"
#include "src/net/kube/tls_transport.h"
#include "src/net/testing/raw_tls_server.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tls_test::KeyPair;
using tls_test::RawConnection;
using tls_test::RawTlsServer;

constexpr absl::Duration kIdle = absl::Seconds(60);

std::string Chunk(const std::string& data) {
  return absl::StrCat(absl::Hex(data.size()), "\r\n", data, "\r\n");
}

std::string Event(const std::string& type, const std::string& rv) {
  return Chunk(absl::StrCat(
      R"({"type":")", type, R"(","object":{"kind":"Pod","metadata":{)",
      R"("name":"p","resourceVersion":")", rv, "\"}}}\n"));
}

const char kWatchHead[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    "Transfer-Encoding: chunked\r\n\r\n";

// What the server saw, for the test thread.
struct Seen {
  std::mutex mu;
  std::vector<std::string> requests;
  std::binary_semaphore resumed{0};
  void Add(const std::string& request) {
    std::lock_guard lock(mu);
    requests.push_back(request.substr(0, request.find("\r\n")));
  }
  std::vector<std::string> Get() {
    std::lock_guard lock(mu);
    return requests;
  }
};

class WatchLivenessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ca_ = new KeyPair(tls_test::MakeCa("liveness-ca"));
    leaf_ = new KeyPair(tls_test::MakeLeaf(*ca_, "apiserver", true));
  }
  static void TearDownTestSuite() {
    delete ca_;
    delete leaf_;
  }

  static config::ApiServerConfig Config(const RawTlsServer& server) {
    config::ApiServerConfig config;
    config.server = server.url();
    config.ca_pem = ca_->cert_pem;
    config.source = "test";
    return config;
  }

  std::unique_ptr<TlsTransport> Connect(const RawTlsServer& server) {
    absl::StatusOr<std::unique_ptr<TlsTransport>> t =
        TlsTransport::Create(Config(server), {.clock = &clock_});
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }

  static KeyPair* ca_;
  static KeyPair* leaf_;
  common::FakeClock clock_;
};
KeyPair* WatchLivenessTest::ca_;
KeyPair* WatchLivenessTest::leaf_;

TEST_F(WatchLivenessTest, ASilentWatchEndsAtTheIdleTimeout) {
  RawTlsServer server(*leaf_, [](RawConnection& conn, int) {
    if (!conn.ReadRequest()) return;
    conn.Write(absl::StrCat(kWatchHead, Event("ADDED", "11"),
                            Event("MODIFIED", "12")));
    conn.WaitForClose();  // silent, the connection open
  });
  auto transport = Connect(server);
  Client client(*transport, clock_, {.qps = 0, .watch_idle_timeout = kIdle});
  std::vector<std::string> seen;
  const absl::Status status =
      client.Watch("/api/v1/pods", {}, [&](const WatchEvent& e) {
        seen.push_back(ResourceVersionOf(e.object));
        // The last bytes the server sends: a minute and a second of
        // silence follows.
        if (seen.size() == 2) clock_.Advance(kIdle + absl::Seconds(1));
        return true;
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(status.message(),
              HasSubstr("nothing from the server for 1m (the idle timeout)"));
  EXPECT_THAT(seen, ElementsAre("11", "12"));
}

TEST_F(WatchLivenessTest, BookmarksKeepAQuietWatchAlive) {
  constexpr int kBookmarks = 6;
  std::counting_semaphore<2 * kBookmarks> next{0};
  RawTlsServer server(*leaf_, [&next](RawConnection& conn, int) {
    if (!conn.ReadRequest()) return;
    conn.Write(absl::StrCat(kWatchHead, Event("BOOKMARK", "1")));
    for (int i = 2; i <= kBookmarks; ++i) {
      next.acquire();
      conn.Write(Event("BOOKMARK", absl::StrCat(i)));
    }
    next.acquire();
    conn.Write("0\r\n\r\n");  // the server ends the watch
    conn.WaitForClose();
  });
  auto transport = Connect(server);
  Client client(*transport, clock_, {.qps = 0, .watch_idle_timeout = kIdle});
  const absl::Time start = clock_.Now();
  int bookmarks = 0;
  const absl::Status status =
      client.Watch("/api/v1/pods", {}, [&](const WatchEvent& e) {
        EXPECT_EQ(e.type, EventType::kBookmark);
        ++bookmarks;
        clock_.Advance(kIdle - absl::Seconds(10));  // each gap under a minute
        next.release();
        return true;
      });
  next.release(kBookmarks - bookmarks + 1);  // the script ends even so
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(bookmarks, kBookmarks);
  EXPECT_GT(clock_.Now() - start, 4 * kIdle);  // the watch outlived it
}

TEST_F(WatchLivenessTest, ListWatcherResumesFromTheLastVersionAfterSilence) {
  Seen seen;
  RawTlsServer server(*leaf_, [&seen](RawConnection& conn, int index) {
    std::optional<std::string> request = conn.ReadRequest();
    if (!request) return;
    seen.Add(*request);
    if (index == 0) {
      const std::string list =
          R"({"metadata":{"resourceVersion":"10"},"items":[]})";
      conn.Write(absl::StrCat("HTTP/1.1 200 OK\r\nConnection: close\r\n",
                              "Content-Length: ", list.size(), "\r\n\r\n",
                              list));
      return;
    }
    if (index == 1) {
      conn.Write(absl::StrCat(kWatchHead, Event("BOOKMARK", "12"),
                              Event("MODIFIED", "13")));
    } else {
      seen.resumed.release();
    }
    conn.WaitForClose();
  });
  auto transport = Connect(server);
  Client client(*transport, clock_, {.qps = 0, .watch_idle_timeout = kIdle});
  ListWatcher watcher(
      client, clock_, "/api/v1/pods", {},
      {.on_event = [&](const WatchEvent& e) {
        if (ResourceVersionOf(e.object) == "13") {
          clock_.Advance(kIdle + absl::Seconds(1));  // then silence
        }
      }});
  std::jthread run([&](std::stop_token stop) { (void)watcher.Run(stop); });
  seen.resumed.acquire();
  run.request_stop();
  run.join();
  EXPECT_THAT(seen.Get(),
              ElementsAre(HasSubstr("GET /api/v1/pods?limit=500"),
                          HasSubstr("watch=true&resourceVersion=10&"),
                          HasSubstr("watch=true&resourceVersion=13&")));
  EXPECT_EQ(watcher.stats().lists, 1);
  EXPECT_EQ(watcher.stats().watches, 2);
  EXPECT_EQ(watcher.stats().errors, 1);
}

int IntOption(int fd, int level, int option) {
  int value = -1;
  socklen_t len = sizeof(value);
  EXPECT_EQ(::getsockopt(fd, level, option, &value, &len), 0) << option;
  return value;
}

TEST_F(WatchLivenessTest, KeepAliveIsTunedOnTheConnection) {
  RawTlsServer server(*leaf_,
                      [](RawConnection& conn, int) { conn.WaitForClose(); });
  absl::StatusOr<SslCtxPtr> ctx = NewClientContext(Config(server));
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  const std::string port = server.url().substr(server.url().rfind(':') + 1);
  const TcpKeepAlive defaults;
  for (const TcpKeepAlive& want :
       {defaults, TcpKeepAlive{.idle = absl::Seconds(7),
                  .interval = absl::Seconds(2),
                  .count = 5,
                  .user_timeout = absl::Seconds(17)}}) {
    TlsConnection conn({.keepalive = want});
    ASSERT_TRUE(
        conn.Connect(ctx->get(), "127.0.0.1", port, absl::InfiniteFuture())
            .ok());
    const int fd = conn.fd();
    EXPECT_EQ(IntOption(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
    EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_KEEPIDLE),
              absl::ToInt64Seconds(want.idle));
    EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_KEEPINTVL),
              absl::ToInt64Seconds(want.interval));
    EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_KEEPCNT), want.count);
    EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_USER_TIMEOUT),
              absl::ToInt64Milliseconds(want.user_timeout));
  }
  EXPECT_EQ(defaults.user_timeout,
            defaults.idle + defaults.interval * defaults.count);
}

}  // namespace
}  // namespace gpulet::kube
