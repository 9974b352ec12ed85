// The TLS transport with an exec credential plugin (a shell script written
// by the test) against a real HTTPS server on 127.0.0.1: the plugin's
// token as the bearer token, its certificate as the TLS client identity,
// and one new run after the server refuses the credential.
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "src/net/kube/tls_transport.h"
#include "src/net/testing/plugin_scripts.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::kube {
namespace {

using tls_test::KeyPair;

// The common name of the certificate the client presented, "" if none.
std::string PeerName(const httplib::Request& req) {
  X509* cert =
      req.ssl != nullptr ? SSL_get1_peer_certificate(req.ssl) : nullptr;
  if (cert == nullptr) return "";
  char name[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name,
                            sizeof(name));
  X509_free(cert);
  return name;
}

class TlsTransportExecTest : public ::testing::Test {
 protected:
  void Serve(const KeyPair& ca, bool client_certs) {
    const KeyPair leaf = tls_test::MakeLeaf(ca, "apiserver", true);
    X509_STORE* store = nullptr;
    if (client_certs) {
      store = X509_STORE_new();
      X509_STORE_add_cert(store, tls_test::ReadCert(ca.cert_pem).get());
    }
    server_ = std::make_unique<httplib::SSLServer>(
        tls_test::ReadCert(leaf.cert_pem).get(),
        tls_test::ReadKey(leaf.key_pem).get(), store);
    port_ = server_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::yield();
  }

  void TearDown() override {
    if (server_ != nullptr) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  // A config whose user runs the script `plugin` answering with the JSON
  // status in the file "answer-<run number>" (the last one written).
  config::ApiServerConfig Config(const KeyPair& ca) {
    const std::string d = scripts_.dir();
    scripts_.Script(
        "plugin",
        absl::StrCat("n=$(cat ", d,
                     "/runs 2>/dev/null || echo 0); n=$((n+1)); "
                     "echo $n > ",
                     d, "/runs\n",
                     "printf '{\"apiVersion\":\"client.authentication.k8s.io/"
                     "v1\",\"kind\":\"ExecCredential\",\"status\":%s}' "
                     "\"$(cat ",
                     d, "/answer-$n)\""));
    config::ApiServerConfig config;
    config.server = absl::StrCat("https://127.0.0.1:", port_);
    config.ca_pem = ca.cert_pem;
    config.source = "kubeconfig test";
    config.exec.emplace();
    config.exec->user = "u";
    config.exec->api_version = config::kExecApiV1;
    config.exec->command = d + "/plugin";
    config.exec->interactive_mode = config::InteractiveMode::kNever;
    return config;
  }

  TlsTransportOptions Options() {
    TlsTransportOptions options;
    options.exec.environment = std::vector<std::string>{"PATH=/usr/bin:/bin"};
    options.exec.stdin_is_terminal = false;
    return options;
  }

  int Runs() { return std::atoi(scripts_.Read("runs").c_str()); }

  testing::PluginScripts scripts_;
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(TlsTransportExecTest, PluginTokenAndOneNewRunAfterA401) {
  const KeyPair ca = tls_test::MakeCa("ca");
  Serve(ca, false);
  std::atomic<int> ok{0};
  server_->Get("/x", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") != "Bearer fresh") {
      res.status = 401;
      return;
    }
    ++ok;
    res.set_content("{}", "application/json");
  });
  scripts_.Write("answer-1", R"({"token":"stale"})");
  scripts_.Write("answer-2", R"({"token":"fresh"})");
  absl::StatusOr<std::unique_ptr<TlsTransport>> transport =
      TlsTransport::Create(Config(ca), Options());
  ASSERT_TRUE(transport.ok()) << transport.status();
  EXPECT_EQ(Runs(), 0);  // nothing runs before the first request

  absl::StatusOr<Response> got = (*transport)->Do({.path = "/x"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 401);  // returned as is, as client-go does
  EXPECT_EQ(Runs(), 1);
  for (int i = 0; i < 3; ++i) {
    got = (*transport)->Do({.path = "/x"});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->status, 200);
  }
  EXPECT_EQ(Runs(), 2);
  EXPECT_EQ(ok.load(), 3);
}

TEST_F(TlsTransportExecTest, PluginCertificateIsTheClientIdentity) {
  const KeyPair ca = tls_test::MakeCa("ca");
  Serve(ca, true);
  std::string seen;
  int calls = 0;
  server_->Get("/x", [&](const httplib::Request& req, httplib::Response& res) {
    seen = PeerName(req);
    // The first identity is refused once, as an expired one would be.
    if (++calls == 1) res.status = 401;
    res.set_content("{}", "application/json");
  });
  auto answer = [&](int run, const std::string& name) {
    const KeyPair pair = tls_test::MakeLeaf(ca, name, false);
    scripts_.Write(absl::StrCat("answer-", run),
                   nlohmann::json{{"clientCertificateData", pair.cert_pem},
                                  {"clientKeyData", pair.key_pem}}
                       .dump());
  };
  answer(1, "first-user");
  answer(2, "second-user");
  absl::StatusOr<std::unique_ptr<TlsTransport>> transport =
      TlsTransport::Create(Config(ca), Options());
  ASSERT_TRUE(transport.ok()) << transport.status();

  absl::StatusOr<Response> got = (*transport)->Do({.path = "/x"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 401);
  EXPECT_EQ(seen, "first-user");
  got = (*transport)->Do({.path = "/x"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(seen, "second-user");
  EXPECT_EQ(Runs(), 2);
  // The connection of the first identity was not reused for the second.
  EXPECT_EQ((*transport)->connections_opened(), 2);
}

TEST_F(TlsTransportExecTest, PluginFailureIsTheRequestsError) {
  const KeyPair ca = tls_test::MakeCa("ca");
  Serve(ca, false);
  config::ApiServerConfig config = Config(ca);
  config.exec->command = scripts_.Script("fails", "exit 4");
  absl::StatusOr<std::unique_ptr<TlsTransport>> transport =
      TlsTransport::Create(config, Options());
  ASSERT_TRUE(transport.ok()) << transport.status();
  absl::StatusOr<Response> got = (*transport)->Do({.path = "/x"});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(got.status().message(),
              ::testing::HasSubstr("of kubeconfig user \"u\": exit status 4"));
}

TEST_F(TlsTransportExecTest, ACertificateThatDoesNotLoadIsNotKept) {
  const KeyPair ca = tls_test::MakeCa("ca");
  Serve(ca, false);
  server_->Get("/x", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  scripts_.Write("answer-1",
                 R"({"clientCertificateData":"not PEM","clientKeyData":"x"})");
  scripts_.Write("answer-2", R"({"token":"t"})");
  absl::StatusOr<std::unique_ptr<TlsTransport>> transport =
      TlsTransport::Create(Config(ca), Options());
  ASSERT_TRUE(transport.ok()) << transport.status();
  absl::StatusOr<Response> got = (*transport)->Do({.path = "/x"});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(),
              ::testing::HasSubstr("(exec plugin credential): client "
                                   "certificate"));
  got = (*transport)->Do({.path = "/x"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(Runs(), 2);
}

}  // namespace
}  // namespace gpulet::kube
