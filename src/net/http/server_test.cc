#include "src/net/http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A blocking TCP client to 127.0.0.1:port.
class RawClient {
 public:
  // From `source` (another loopback address is another peer). Reads give
  // up after 60 s, so that a test whose answer never comes fails instead
  // of hanging.
  explicit RawClient(int port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const timeval limit{.tv_sec = 60, .tv_usec = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    if (source != nullptr) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &from.sin_addr);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ =
        ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawClient() { ::close(fd_); }
  bool connected() const { return connected_; }

  bool Send(const std::string& data) {
    return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(data.size());
  }
  // One whole response (head and Content-Length body), or what arrived
  // before the server closed the connection.
  std::string ReadResponse() {
    while (true) {
      const size_t end = buf_.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t length = 0;
        const size_t at = buf_.find("Content-Length: ");
        if (at != std::string::npos && at < end) {
          (void)absl::SimpleAtoi(
              buf_.substr(at + 16, buf_.find("\r\n", at) - at - 16), &length);
        }
        if (buf_.size() >= end + 4 + length) {
          std::string out = buf_.substr(0, end + 4 + length);
          buf_.erase(0, end + 4 + length);
          return out;
        }
      }
      if (!ReadMore()) {
        std::string out = std::move(buf_);
        buf_.clear();
        return out;
      }
    }
  }
  // True when the server closed the connection (reads until EOF or a
  // reset); false when the read limit passed first.
  bool ClosedByServer() {
    char chunk[4096];
    while (true) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n > 0) continue;
      return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    }
  }

 private:
  bool ReadMore() {
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

Response Echo(const Request& r) {
  return Response{.status = 200,
                  .content_type = "text/plain",
                  .body = absl::StrCat(r.method, " ", r.path, " ", r.body)};
}

std::unique_ptr<Server> StartServer(ServerOptions options,
                                    Handler handler = Echo) {
  options.address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Server>> s =
      Server::Start(options, std::move(handler));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

TEST(Server, AnswersRequestsOnAKeptAliveConnection) {
  auto server = StartServer({});
  ASSERT_NE(server, nullptr);
  RawClient c(server->port());
  ASSERT_TRUE(c.connected());
  // Two requests in one write, then a third: pipelining and keep-alive.
  ASSERT_TRUE(
      c.Send("POST /filter HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
             "GET /healthz HTTP/1.1\r\n\r\n"));
  std::string first = c.ReadResponse();
  EXPECT_THAT(first, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(first, HasSubstr("Connection: keep-alive"));
  EXPECT_THAT(first, HasSubstr("\r\n\r\nPOST /filter {}"));
  EXPECT_THAT(c.ReadResponse(), HasSubstr("\r\n\r\nGET /healthz "));
  ASSERT_TRUE(c.Send("GET /x HTTP/1.1\r\nConnection: close\r\n\r\n"));
  EXPECT_THAT(c.ReadResponse(), HasSubstr("Connection: close"));
  EXPECT_TRUE(c.ClosedByServer());
}

TEST(Server, BodyAboveTheLimitIs413BeforeItIsRead) {
  ServerOptions options;
  options.max_body_bytes = 1024;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  RawClient c(server->port());
  ASSERT_TRUE(c.Send("POST /filter HTTP/1.1\r\nContent-Length: 1025\r\n\r\n"));
  std::string answer = c.ReadResponse();
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 413 Content Too Large\r\n"));
  EXPECT_THAT(answer, HasSubstr("larger than the limit of 1024"));
  EXPECT_TRUE(c.ClosedByServer());
}

TEST(Server, ExpectContinueGetsAnInterimAnswer) {
  auto server = StartServer({});
  ASSERT_NE(server, nullptr);
  RawClient c(server->port());
  ASSERT_TRUE(
      c.Send("POST /bind HTTP/1.1\r\nContent-Length: 3\r\nExpect: "
             "100-continue\r\n\r\n"));
  EXPECT_EQ(c.ReadResponse(), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(c.Send("abc"));
  EXPECT_THAT(c.ReadResponse(), HasSubstr("POST /bind abc"));
}

TEST(Server, MalformedAndOversizedHeads) {
  ServerOptions options;
  options.max_head_bytes = 256;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  {
    RawClient c(server->port());
    ASSERT_TRUE(
        c.Send("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"));
    EXPECT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 411 "));
  }
  {
    RawClient c(server->port());
    ASSERT_TRUE(c.Send("garbage\r\n\r\n"));
    EXPECT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 400 "));
  }
  {
    RawClient c(server->port());
    ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nX: " + std::string(300, 'a')));
    EXPECT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 431 "));
  }
}

TEST(Server, ASlowClientIsDisconnectedAtTheDeadline) {
  ServerOptions options;
  options.request_deadline = absl::Milliseconds(200);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  RawClient c(server->port());
  ASSERT_TRUE(c.Send("POST /filter HTTP/1.1\r\nContent-Le"));
  // No answer: the server closes the connection once the deadline passed.
  EXPECT_EQ(c.ReadResponse(), "");
}

// A handler that holds requests for "/hold" until released.
class Gate {
 public:
  Handler handler() {
    return [this](const Request& r) {
      absl::MutexLock lock(&mu_);
      seen_.push_back(r.path);
      if (r.path == "/hold") {
        ++held_;
        mu_.Await(absl::Condition(&open_));
      }
      return Echo(r);
    };
  }
  bool Seen(const std::string& path) {
    absl::MutexLock lock(&mu_);
    return std::find(seen_.begin(), seen_.end(), path) != seen_.end();
  }
  void WaitHeld(int n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]()
                      ABSL_SHARED_LOCKS_REQUIRED(mu_) { return held_ >= n; };
    mu_.Await(absl::Condition(&enough));
  }
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }

 private:
  absl::Mutex mu_;
  int held_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> seen_ ABSL_GUARDED_BY(mu_);
  bool open_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(Server, ConnectionsBeyondTheCapWaitForASlot) {
  ServerOptions options;
  options.max_connections = 1;
  Gate gate;
  auto server = StartServer(options, gate.handler());
  ASSERT_NE(server, nullptr);
  RawClient first(server->port());
  ASSERT_TRUE(first.Send("GET /hold HTTP/1.1\r\nConnection: close\r\n\r\n"));
  gate.WaitHeld(1);
  // The first connection is busy and holds the only slot; the second is
  // connected by the kernel's backlog but served only once it frees.
  RawClient second(server->port());
  ASSERT_TRUE(second.Send("GET /b HTTP/1.1\r\n\r\n"));
  gate.Open();
  EXPECT_THAT(first.ReadResponse(), HasSubstr("GET /hold"));
  EXPECT_THAT(second.ReadResponse(), HasSubstr("GET /b"));
}

// Idle keep-alive connections, more than the server has slots, from
// several peers, do not keep a request from being answered: the oldest
// idle ones give way. Before, they held every slot until their idle
// timeout and the request waited in the backlog.
TEST(Server, IdleConnectionsGiveWayToARequest) {
  ServerOptions options;  // 64 connections, 32 per peer
  options.idle_timeout = absl::Hours(1);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawClient>> idle;
  const char* peers[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"};
  for (int i = 0; i < 80; ++i) {
    idle.push_back(std::make_unique<RawClient>(server->port(), peers[i % 4]));
    ASSERT_TRUE(idle.back()->connected());
    // Served once, then kept alive.
    ASSERT_TRUE(idle.back()->Send("GET /healthz HTTP/1.1\r\n\r\n"));
    ASSERT_THAT(idle.back()->ReadResponse(), HasSubstr("GET /healthz")) << i;
  }
  RawClient filter(server->port());
  ASSERT_TRUE(
      filter.Send("POST /filter HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"));
  EXPECT_THAT(filter.ReadResponse(), HasSubstr("POST /filter {}"));
}

// One peer holds at most max_connections_per_peer slots: with all of its
// connections busy its next one waits (parked) while another peer is
// served, and is served once one of its own has room.
TEST(Server, OnePeerHoldsAtMostItsShare) {
  ServerOptions options;
  options.max_connections = 8;
  options.max_connections_per_peer = 2;
  Gate gate;
  auto server = StartServer(options, gate.handler());
  ASSERT_NE(server, nullptr);
  RawClient a(server->port(), "127.0.0.2"), b(server->port(), "127.0.0.2");
  ASSERT_TRUE(a.Send("GET /hold HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(b.Send("GET /hold HTTP/1.1\r\n\r\n"));
  gate.WaitHeld(2);
  RawClient third(server->port(), "127.0.0.2");
  ASSERT_TRUE(third.Send("GET /third HTTP/1.1\r\n\r\n"));
  RawClient other(server->port(), "127.0.0.3");
  ASSERT_TRUE(other.Send("GET /other HTTP/1.1\r\n\r\n"));
  EXPECT_THAT(other.ReadResponse(), HasSubstr("GET /other"));
  EXPECT_FALSE(gate.Seen("/third"));  // parked behind its peer's two
  gate.Open();
  EXPECT_THAT(a.ReadResponse(), HasSubstr("GET /hold"));
  EXPECT_THAT(third.ReadResponse(), HasSubstr("GET /third"));
}

TEST(Server, AnIdleConnectionIsClosedAfterTheIdleTimeout) {
  ServerOptions options;
  options.idle_timeout = absl::Milliseconds(200);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  RawClient c(server->port());
  ASSERT_TRUE(c.Send("GET /a HTTP/1.1\r\n\r\n"));
  EXPECT_THAT(c.ReadResponse(), HasSubstr("GET /a"));
  EXPECT_TRUE(c.ClosedByServer());  // EOF, not the 60 s read limit
}

TEST(Server, HandlerExceptionsBecome500) {
  auto server = StartServer(
      {}, [](const Request&) -> Response { throw std::runtime_error("boom"); });
  ASSERT_NE(server, nullptr);
  RawClient c(server->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\n\r\n"));
  EXPECT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 500 "));
}

TEST(Server, StoppingEndsOpenConnections) {
  auto server = StartServer({});
  ASSERT_NE(server, nullptr);
  RawClient c(server->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\n\r\n"));
  EXPECT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 200 "));
  server.reset();  // joins the connection thread waiting in keep-alive
  EXPECT_TRUE(c.ClosedByServer());
}

TEST(Server, StartErrorsNameTheOption) {
  ServerOptions options;
  options.address = "nonsense";
  EXPECT_THAT(Server::Start(options, Echo).status().message(),
              HasSubstr("http address \"nonsense\""));
  options.address = "127.0.0.1:0";
  options.tls_cert_file = "/x.pem";
  EXPECT_THAT(Server::Start(options, Echo).status().message(),
              HasSubstr("--tls-cert-file and --tls-key-file go together"));
  options.tls_key_file = "/nonexistent/key.pem";
  options.tls_cert_file = "/nonexistent/cert.pem";
  EXPECT_THAT(Server::Start(options, Echo).status().message(),
              HasSubstr("--tls-cert-file /nonexistent/cert.pem"));
}

}  // namespace
}  // namespace gpulet::http
