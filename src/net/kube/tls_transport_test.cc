// The TLS transport against a real HTTPS server on 127.0.0.1
// (cpp-httplib) with certificates made by the test: certificate
// verification, client certificates, bearer tokens and their rotation,
// streamed watches, and the Client on top.
#include "src/net/kube/tls_transport.h"

#include <openssl/x509.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "src/base/common/file_util.h"
#include "src/base/common/logging.h"
#include "src/net/kube/api_status.h"
#include "src/net/kube/client.h"
#include "src/net/testing/https_test_server.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tls_test::KeyPair;

using TlsServer = tls_test::HttpsTestServer;

class TlsTransportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ca_ = new KeyPair(tls_test::MakeCa("test-ca"));
    other_ca_ = new KeyPair(tls_test::MakeCa("other-ca"));
    server_cert_ = new KeyPair(tls_test::MakeLeaf(*ca_, "apiserver", true));
    client_cert_ =
        new KeyPair(tls_test::MakeLeaf(*ca_, "system:node:n1", false));
  }
  static void TearDownTestSuite() {
    delete ca_;
    delete other_ca_;
    delete server_cert_;
    delete client_cert_;
  }

  config::ApiServerConfig Config(const TlsServer& server) const {
    config::ApiServerConfig config;
    config.server = server.url();
    config.ca_pem = ca_->cert_pem;
    config.source = "test";
    return config;
  }

  static KeyPair* ca_;
  static KeyPair* other_ca_;
  static KeyPair* server_cert_;
  static KeyPair* client_cert_;
};
KeyPair* TlsTransportTest::ca_;
KeyPair* TlsTransportTest::other_ca_;
KeyPair* TlsTransportTest::server_cert_;
KeyPair* TlsTransportTest::client_cert_;

std::unique_ptr<TlsTransport> MustCreate(
    const config::ApiServerConfig& config,
    const TlsTransportOptions& options = {}) {
  absl::StatusOr<std::unique_ptr<TlsTransport>> t =
      TlsTransport::Create(config, options);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

TEST_F(TlsTransportTest, VerifiesTheServerWithTheConfiguredCa) {
  TlsServer server(*server_cert_);
  std::string auth;
  server.http().Get("/api/v1/nodes/n1",
                    [&](const httplib::Request& req, httplib::Response& res) {
                      auth = req.get_header_value("Authorization");
                      res.set_content(R"({"kind":"Node"})", "application/json");
                    });
  config::ApiServerConfig config = Config(server);
  config.token = "static-token-1234";
  auto transport = MustCreate(config);
  absl::StatusOr<Response> got =
      transport->Do({.method = "GET", .path = "/api/v1/nodes/n1"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, R"({"kind":"Node"})");
  EXPECT_EQ(auth, "Bearer static-token-1234");
}

TEST_F(TlsTransportTest, RefusesAServerSignedByAnotherCa) {
  TlsServer server(*server_cert_);
  int calls = 0;
  server.http().Get(
      "/x", [&](const httplib::Request&, httplib::Response&) { ++calls; });
  config::ApiServerConfig config = Config(server);
  config.ca_pem = other_ca_->cert_pem;
  config.token = "static-token-1234";
  auto transport = MustCreate(config);
  absl::StatusOr<Response> got = transport->Do({.path = "/x"});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(got.status().message(), HasSubstr("did not verify"));
  EXPECT_THAT(got.status().message(), HasSubstr("GET https://127.0.0.1:"));
  // OpenSSL's verify error, after the host and the step.
  EXPECT_THAT(got.status().message(),
              HasSubstr("TLS handshake with 127.0.0.1:"));
  EXPECT_THAT(got.status().message(),
              HasSubstr("unable to get local issuer certificate"));
  EXPECT_THAT(got.status().message(),
              ::testing::Not(HasSubstr("static-token-1234")));
  EXPECT_EQ(calls, 0);
}

TEST_F(TlsTransportTest, VerifiesTheHostName) {
  TlsServer server(*server_cert_);  // valid for IP:127.0.0.1 only
  server.http().Get("/x", [](const httplib::Request&, httplib::Response&) {});
  config::ApiServerConfig config = Config(server);
  config.server = absl::StrCat("https://localhost:", server.port());
  auto transport = MustCreate(config);
  absl::StatusOr<Response> got = transport->Do({.path = "/x"});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(got.status().message(), HasSubstr("hostname mismatch"));
}

TEST_F(TlsTransportTest, PresentsTheClientCertificate) {
  TlsServer server(*server_cert_, ca_->cert_pem);
  int calls = 0;
  server.http().Get("/x", [&](const httplib::Request&, httplib::Response& r) {
    ++calls;
    r.set_content("{}", "application/json");
  });
  config::ApiServerConfig config = Config(server);
  auto anonymous = MustCreate(config);
  EXPECT_FALSE(anonymous->Do({.path = "/x"}).ok());
  EXPECT_EQ(calls, 0);

  config.client_cert_pem = client_cert_->cert_pem;
  config.client_key_pem = client_cert_->key_pem;
  auto transport = MustCreate(config);
  absl::StatusOr<Response> got = transport->Do({.path = "/x"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(calls, 1);
}

TEST_F(TlsTransportTest, CreateRefusesPlainHttpAndHalfACertificate) {
  config::ApiServerConfig config;
  config.server = "http://127.0.0.1:8080";
  EXPECT_EQ(TlsTransport::Create(config).status().code(),
            absl::StatusCode::kInvalidArgument);
  config.server = "https://127.0.0.1:6443";
  config.client_cert_pem = "x";
  EXPECT_EQ(TlsTransport::Create(config).status().code(),
            absl::StatusCode::kInvalidArgument);
}

class TempFile {
 public:
  TempFile() {
    char tmpl[] = "/tmp/ktls.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~TempFile() { std::filesystem::remove_all(dir_); }
  std::string path() const { return dir_ + "/token"; }
  void Write(const std::string& text) const {
    ASSERT_TRUE(common::WriteFileAtomic(path(), text, {.durable = false}).ok());
  }
  std::string Read(const std::string& name) const {
    absl::StatusOr<std::string> text = common::ReadFile(dir_ + "/" + name);
    return text.ok() ? *text : "";
  }
  std::string dir() const { return dir_; }

 private:
  std::string dir_;
};

TEST_F(TlsTransportTest, RereadsARotatedTokenFileAndNeverLogsIt) {
  TempFile token;
  token.Write("tok-one-SECRET\n");
  TlsServer server(*server_cert_);
  std::mutex mu;
  std::vector<std::string> seen;
  std::string rejected = "Bearer tok-two-SECRET";
  server.http().Get("/x", [&](const httplib::Request& req,
                              httplib::Response& res) {
    std::lock_guard lock(mu);
    std::string auth = req.get_header_value("Authorization");
    seen.push_back(auth.substr(std::string("Bearer ").size()));
    if (auth == rejected) {
      res.status = 401;
      res.set_content(R"({"kind":"Status","code":401,"reason":"Unauthorized",)"
                      R"("message":"Unauthorized"})",
                      "application/json");
      return;
    }
    res.set_content("{}", "application/json");
  });

  // Everything the client logs, at the highest verbosity, goes to a file.
  const std::string log_path = token.dir() + "/log";
  const int log_fd = ::open(log_path.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(log_fd, 0);
  common::SetLogFd(log_fd);
  common::SetVerbosity(10);

  common::FakeClock clock;
  config::ApiServerConfig config = Config(server);
  config.token_file = token.path();
  auto transport = MustCreate(config, {.clock = &clock});
  Client client(*transport, clock, {.qps = 0});

  EXPECT_TRUE(client.Get("/x").ok());
  token.Write("tok-two-SECRET\n");
  EXPECT_TRUE(client.Get("/x").ok());  // still the cached token
  clock.Advance(absl::Seconds(61));
  // The server refuses the new token...
  absl::StatusOr<nlohmann::json> refused = client.Get("/x");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated);
  // ...and the next request re-reads the file at once.
  token.Write("tok-three-SECRET\n");
  EXPECT_TRUE(client.Get("/x").ok());

  common::SetVerbosity(0);
  common::SetLogFd(2);
  ::close(log_fd);
  {
    std::lock_guard lock(mu);
    EXPECT_THAT(seen, ElementsAre("tok-one-SECRET", "tok-one-SECRET",
                                  "tok-two-SECRET", "tok-three-SECRET"));
  }
  EXPECT_THAT(refused.status().message(), ::testing::Not(HasSubstr("SECRET")));
  EXPECT_THAT(token.Read("log"), ::testing::Not(HasSubstr("SECRET")));
}

// A chunked watch body written in steps the test controls.
struct StreamScript {
  std::mutex mu;
  std::condition_variable cv;
  bool first_seen = false;  // the client decoded the first event
  bool release = false;     // the server may finish
};

TEST_F(TlsTransportTest, WatchEventsArriveWhileTheStreamIsOpen) {
  TlsServer server(*server_cert_);
  StreamScript script;
  std::string query;
  const std::string ev1 =
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"6"}}})"
      "\n";
  const std::string ev2 =
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})"
      "\n";
  server.http().Get(
      "/api/v1/pods", [&](const httplib::Request& req, httplib::Response& res) {
        query = absl::StrCat(req.get_param_value("resourceVersion"), " ",
                             req.get_param_value("fieldSelector"), " ",
                             req.get_param_value("allowWatchBookmarks"));
        res.set_chunked_content_provider(
            "application/json", [&](size_t, httplib::DataSink& sink) {
              // The first event and half of the second...
              sink.write(ev1.data(), ev1.size());
              sink.write(ev2.data(), 20);
              {
                std::unique_lock lock(script.mu);
                script.cv.wait(lock, [&] { return script.first_seen; });
              }
              // ...the rest only once the client has decoded the first.
              sink.write(ev2.data() + 20, ev2.size() - 20);
              sink.done();
              return true;
            });
      });
  auto transport = MustCreate(Config(server));
  common::FakeClock clock;
  Client client(*transport, clock, {.qps = 0});
  std::vector<std::string> seen;
  absl::Status status = client.Watch(
      "/api/v1/pods",
      {.field_selector = "spec.nodeName=n1", .resource_version = "5"},
      [&](const WatchEvent& event) {
        seen.push_back(absl::StrCat(EventTypeName(event.type), " ",
                                    ResourceVersionOf(event.object)));
        std::lock_guard lock(script.mu);
        script.first_seen = true;
        script.cv.notify_all();
        return true;
      });
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_THAT(seen, ElementsAre("ADDED 6", "BOOKMARK 7"));
  EXPECT_EQ(query, "5 spec.nodeName=n1 true");
}

TEST_F(TlsTransportTest, StopEndsAnOpenWatch) {
  TlsServer server(*server_cert_);
  StreamScript script;
  const std::string ev =
      R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"6"}}})"
      "\n";
  server.http().Get(
      "/api/v1/pods", [&](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider(
            "application/json", [&](size_t, httplib::DataSink& sink) {
              sink.write(ev.data(), ev.size());
              std::unique_lock lock(script.mu);
              script.cv.wait(lock, [&] { return script.release; });
              sink.done();
              return true;
            });
      });
  auto transport = MustCreate(Config(server));
  common::FakeClock clock;
  Client client(*transport, clock, {.qps = 0});
  std::stop_source stop;
  absl::Status status = client.Watch(
      "/api/v1/pods", {},
      [&](const WatchEvent&) {
        stop.request_stop();
        return true;
      },
      stop.get_token());
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  {
    std::lock_guard lock(script.mu);
    script.release = true;
  }
  script.cv.notify_all();
}

TEST_F(TlsTransportTest, ThreadsShareOneTransport) {
  TlsServer server(*server_cert_);
  server.http().Get("/x", [](const httplib::Request&, httplib::Response& r) {
    r.set_content("{}", "application/json");
  });
  auto transport = MustCreate(Config(server));
  constexpr int kThreads = 4;
  constexpr int kRequests = 20;
  std::atomic<int> ok{0};
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kRequests; ++i) {
          absl::StatusOr<Response> got = transport->Do({.path = "/x"});
          if (got.ok() && got->status == 200 && got->body == "{}") ++ok;
        }
      });
    }
  }
  EXPECT_EQ(ok.load(), kThreads * kRequests);
  // Connections are reused (the server ends each after a few requests).
  EXPECT_LT(transport->connections_opened(), kThreads * kRequests / 2);
}

TEST_F(TlsTransportTest, ClientOperationsOverTls) {
  TlsServer server(*server_cert_);
  std::string patch_type, patch_body, post_body;
  server.http().Get("/api/v1/nodes/n9", [](const httplib::Request&,
                                           httplib::Response& res) {
    res.status = 404;
    res.set_content(
        R"({"kind":"Status","status":"Failure","message":"nodes \"n9\" not found","reason":"NotFound","code":404})",
        "application/json");
  });
  server.http().Patch("/api/v1/nodes/n1", [&](const httplib::Request& req,
                                              httplib::Response& res) {
    patch_type = req.get_header_value("Content-Type");
    patch_body = req.body;
    res.set_content(R"({"kind":"Node"})", "application/json");
  });
  server.http().Post("/api/v1/namespaces/ns/pods/p/binding",
                     [&](const httplib::Request& req, httplib::Response& res) {
                       post_body = req.body;
                       res.status = 201;
                       res.set_content(
                           R"({"kind":"Status","status":"Success","code":201})",
                           "application/json");
                     });
  server.http().Get("/api/v1/pods", [](const httplib::Request& req,
                                       httplib::Response& res) {
    if (req.get_param_value("continue").empty()) {
      res.set_content(
          R"({"metadata":{"continue":"next"},"items":[{"metadata":{"name":"a"}}]})",
          "application/json");
    } else {
      res.set_content(
          R"({"metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"b"}}]})",
          "application/json");
    }
  });
  auto transport = MustCreate(Config(server));
  common::FakeClock clock;
  Client client(*transport, clock, {.qps = 0, .page_size = 1});

  absl::StatusOr<nlohmann::json> missing = client.Get("/api/v1/nodes/n9");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nodes \"n9\" not found"));

  ASSERT_TRUE(client
                  .MergePatch("/api/v1/nodes/n1",
                              {{"metadata", {{"labels", {{"a", "b"}}}}}})
                  .ok());
  EXPECT_EQ(patch_type, "application/merge-patch+json");
  EXPECT_EQ(patch_body, R"({"metadata":{"labels":{"a":"b"}}})");

  ASSERT_TRUE(client
                  .Create("/api/v1/namespaces/ns/pods/p/binding",
                          {{"target", {{"kind", "Node"}, {"name", "n1"}}}})
                  .ok());
  EXPECT_EQ(post_body, R"({"target":{"kind":"Node","name":"n1"}})");

  absl::StatusOr<ListResult> list = client.List("/api/v1/pods", {});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->resource_version, "9");
}

}  // namespace
}  // namespace gpulet::kube
