// TlsTransport against a TLS server whose bytes the test writes
// (raw_tls_server.h): connection reuse, servers closing pooled
// connections, chunked and truncated bodies, size bounds, timeouts and a
// stop from another thread.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/net/kube/tls_transport.h"
#include "src/net/testing/raw_tls_server.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::kube {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using tls_test::KeyPair;
using tls_test::RawConnection;
using tls_test::RawTlsServer;

std::string Ok(const std::string& body) {
  return absl::StrCat("HTTP/1.1 200 OK\r\nContent-Length: ", body.size(),
                      "\r\n\r\n", body);
}

class TlsTransportWireTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ca_ = new KeyPair(tls_test::MakeCa("wire-ca"));
    leaf_ = new KeyPair(tls_test::MakeLeaf(*ca_, "apiserver", true));
  }
  static void TearDownTestSuite() {
    delete ca_;
    delete leaf_;
  }

  std::unique_ptr<TlsTransport> Connect(const RawTlsServer& server,
                                        TlsTransportOptions options = {}) {
    config::ApiServerConfig config;
    config.server = server.url();
    config.ca_pem = ca_->cert_pem;
    config.source = "test";
    absl::StatusOr<std::unique_ptr<TlsTransport>> t =
        TlsTransport::Create(config, options);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }

  static KeyPair* ca_;
  static KeyPair* leaf_;
};
KeyPair* TlsTransportWireTest::ca_;
KeyPair* TlsTransportWireTest::leaf_;

// A flag one thread waits for and another sets.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  void Open() {
    std::lock_guard lock(mu);
    release = true;
    cv.notify_all();
  }
  void WaitOpen() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return release; });
  }
};

// Answers every request on a connection until the client closes it.
void AnswerAll(RawConnection& conn, int) {
  int n = 0;
  while (conn.ReadRequest()) conn.Write(Ok(absl::StrCat("{\"n\":", ++n, "}")));
}

TEST_F(TlsTransportWireTest, KeepsTheConnectionAliveAcrossRequests) {
  RawTlsServer server(*leaf_, AnswerAll);
  auto transport = Connect(server);
  for (int i = 1; i <= 3; ++i) {
    absl::StatusOr<Response> got = transport->Do({.path = "/x"});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->body, absl::StrCat("{\"n\":", i, "}"));
  }
  EXPECT_EQ(transport->connections_opened(), 1);
  EXPECT_EQ(server.accepted(), 1);
}

TEST_F(TlsTransportWireTest, ChunkedBodyOneByteAtATime) {
  RawTlsServer server(*leaf_, [](RawConnection& conn, int) {
    while (conn.ReadRequest()) {
      const std::string wire =
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
          "3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
      for (char c : wire) conn.Write(std::string(1, c));
    }
  });
  auto transport = Connect(server);
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Response> got = transport->Do({.path = "/x"});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->body, "abcde");
  }
  EXPECT_EQ(transport->connections_opened(), 1);
}

TEST_F(TlsTransportWireTest, GetGoesAgainWhenAPooledConnectionDies) {
  // The first connection answers one request, then takes the next and
  // closes without a word, as a server ending an idle connection does
  // when the request crosses its close.
  RawTlsServer server(*leaf_, [](RawConnection& conn, int index) {
    if (index == 0) {
      if (conn.ReadRequest()) conn.Write(Ok("{\"first\":1}"));
      conn.ReadRequest();
      return;
    }
    AnswerAll(conn, index);
  });
  auto transport = Connect(server);
  ASSERT_TRUE(transport->Do({.path = "/x"}).ok());
  absl::StatusOr<Response> got = transport->Do({.path = "/x"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->body, "{\"n\":1}");
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(transport->connections_opened(), 2);
}

TEST_F(TlsTransportWireTest, PatchIsNotRepeatedOnceSent) {
  RawTlsServer server(*leaf_, [](RawConnection& conn, int index) {
    if (index == 0) {
      if (conn.ReadRequest()) conn.Write(Ok("{}"));
      conn.ReadRequest();
      return;
    }
    AnswerAll(conn, index);
  });
  auto transport = Connect(server);
  const Request patch = {.method = "PATCH",
                         .path = "/api/v1/nodes/n1",
                         .content_type = "application/merge-patch+json",
                         .body = "{}"};
  ASSERT_TRUE(transport->Do(patch).ok());
  absl::StatusOr<Response> got = transport->Do(patch);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(got.status().message()),
              StartsWith("PATCH https://127.0.0.1:"));
  EXPECT_EQ(server.requests(), 2);
  EXPECT_EQ(transport->connections_opened(), 1);
}

TEST_F(TlsTransportWireTest, AnIdleConnectionTheServerClosedIsNotUsed) {
  Gate closed;
  RawTlsServer server(*leaf_, [&closed](RawConnection& conn, int index) {
    if (index == 0) {
      if (conn.ReadRequest()) conn.Write(Ok("{}"));
      conn.CloseWrite();
      closed.Open();
      conn.WaitForClose();
      return;
    }
    AnswerAll(conn, index);
  });
  auto transport = Connect(server);
  const Request post = {.method = "POST", .path = "/x", .body = "{}"};
  ASSERT_TRUE(transport->Do(post).ok());
  // The server has closed the pooled connection: the POST goes out on a
  // new one, once.
  closed.WaitOpen();
  absl::StatusOr<Response> got = transport->Do(post);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(server.requests(), 2);
  EXPECT_EQ(transport->connections_opened(), 2);
}

TEST_F(TlsTransportWireTest, TruncatedBodyIsAnError) {
  RawTlsServer server(*leaf_, [](RawConnection& conn, int) {
    if (conn.ReadRequest()) {
      conn.Write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789");
    }
  });
  auto transport = Connect(server);
  absl::StatusOr<Response> got = transport->Do({.path = "/x"});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(got.status().message(), HasSubstr("90 bytes of the body"));
  EXPECT_EQ(server.requests(), 1);  // a GET that got an answer is not resent
}

TEST_F(TlsTransportWireTest, OversizedHeadersAndBodiesAreRefused) {
  RawTlsServer server(*leaf_, [](RawConnection& conn, int index) {
    if (!conn.ReadRequest()) return;
    if (index == 0) {
      conn.Write("HTTP/1.1 200 OK\r\nX-Big: " + std::string(5000, 'h') +
                 "\r\nContent-Length: 0\r\n\r\n");
    } else {
      conn.Write(Ok(std::string(5000, 'b')));
    }
  });
  auto transport = Connect(server, {.max_body = 4096, .max_head = 4096});
  absl::StatusOr<Response> got = transport->Do({.path = "/head"});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(got.status().message(), HasSubstr("headers are longer"));
  got = transport->Do({.path = "/body"});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(got.status().message(), HasSubstr("too large"));
}

TEST_F(TlsTransportWireTest, RequestTimeoutIsDeadlineExceeded) {
  Gate gate;
  RawTlsServer server(*leaf_, [&gate](RawConnection& conn, int) {
    if (conn.ReadRequest()) gate.WaitOpen();
  });
  auto transport = Connect(server);
  absl::StatusOr<Response> got =
      transport->Do({.path = "/slow", .timeout = absl::Milliseconds(50)});
  gate.Open();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded)
      << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("GET https://127.0.0.1:"));
}

TEST_F(TlsTransportWireTest, StopFromAnotherThreadEndsABlockedStream) {
  Gate gate;
  RawTlsServer server(*leaf_, [&gate](RawConnection& conn, int) {
    if (!conn.ReadRequest()) return;
    conn.Write(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3\r\nev\n\r\n");
    gate.WaitOpen();
  });
  auto transport = Connect(server);
  std::stop_source stop;
  std::mutex mu;
  std::condition_variable cv;
  bool first = false;
  std::thread stopper([&] {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return first; });
    stop.request_stop();  // the stream is blocked reading by now or soon
  });
  absl::StatusOr<Response> got = transport->Stream(
      {.path = "/watch", .timeout = absl::InfiniteDuration()},
      [&](absl::string_view chunk) {
        EXPECT_EQ(chunk, "ev\n");
        std::lock_guard lock(mu);
        first = true;
        cv.notify_all();
        return true;
      },
      stop.get_token());
  stopper.join();
  gate.Open();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled) << got.status();
}

TEST_F(TlsTransportWireTest, ConnectionRefusedNamesTheHost) {
  // A port bound but not listening refuses connections, and stays ours.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  config::ApiServerConfig config;
  config.server = absl::StrCat("https://127.0.0.1:", port);
  config.ca_pem = ca_->cert_pem;
  config.source = "test";
  auto transport = TlsTransport::Create(config);
  ASSERT_TRUE(transport.ok());
  absl::StatusOr<Response> got = (*transport)->Do({.path = "/x"});
  ::close(fd);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr(absl::StrCat("connect to 127.0.0.1:", port,
                                     ": Connection refused")));
}

TEST_F(TlsTransportWireTest, CreateRefusesBadUrlsAndPem) {
  config::ApiServerConfig config;
  config.source = "kubeconfig /k";
  for (const char* url : {"https://", "https://h:0", "https://h:x",
                          "https://u@h", "https://h:443?x", "https://[::1"}) {
    config.server = url;
    EXPECT_EQ(TlsTransport::Create(config).status().code(),
              absl::StatusCode::kInvalidArgument)
        << url;
  }
  config.server = "https://[::1]:6443/prefix/";
  EXPECT_TRUE(TlsTransport::Create(config).ok());
  config.ca_pem = "not pem";
  absl::Status s = TlsTransport::Create(config).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("kubeconfig /k: certificate authority"));
  config.ca_pem = ca_->cert_pem;
  config.client_cert_pem = leaf_->cert_pem;
  config.client_key_pem = ca_->key_pem;  // not the certificate's key
  s = TlsTransport::Create(config).status();
  EXPECT_THAT(s.message(), HasSubstr("does not match"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("PRIVATE KEY")));
}

}  // namespace
}  // namespace gpulet::kube
