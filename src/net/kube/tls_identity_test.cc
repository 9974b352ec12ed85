// Who the TLS transport says it is, against HTTPS servers on 127.0.0.1:
// a kubeconfig's impersonation fields as the Impersonate-* headers a server
// receives, and a client certificate rotated on disk presented by the next
// connection to a server that demands client certificates.
#include <fcntl.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "src/base/common/file_util.h"
#include "src/base/common/logging.h"
#include "src/net/kube/kubeconfig.h"
#include "src/net/kube/tls_transport.h"
#include "src/net/testing/https_test_server.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::kube {
namespace {

using ::testing::ElementsAre;
using tls_test::HttpsTestServer;
using tls_test::KeyPair;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kid.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(common::WriteFileAtomic(path, text, {.durable = false}).ok());
    return path;
  }
  std::string Read(const std::string& name) const {
    absl::StatusOr<std::string> text = common::ReadFile(dir_ + "/" + name);
    return text.ok() ? *text : "";
  }
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
};

class TlsIdentityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ca_ = new KeyPair(tls_test::MakeCa("identity-ca"));
    server_cert_ = new KeyPair(tls_test::MakeLeaf(*ca_, "apiserver", true));
  }
  static void TearDownTestSuite() {
    delete ca_;
    delete server_cert_;
  }
  static inline KeyPair* ca_ = nullptr;
  static inline KeyPair* server_cert_ = nullptr;
};

std::unique_ptr<TlsTransport> MustCreate(const config::ApiServerConfig& c) {
  absl::StatusOr<std::unique_ptr<TlsTransport>> t = TlsTransport::Create(c);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

// The kubeconfig's as, as-uid, as-groups and as-user-extra reach the
// server as headers, one per group and per extra value, extra keys
// percent-encoded.
TEST_F(TlsIdentityTest, KubeconfigImpersonationReachesTheServer) {
  HttpsTestServer server(*server_cert_);
  std::mutex mu;
  httplib::Headers seen;
  server.http().Get("/x",
                    [&](const httplib::Request& req, httplib::Response& res) {
                      std::lock_guard lock(mu);
                      for (const auto& [name, value] : req.headers) {
                        if (absl::StartsWithIgnoreCase(name, "Impersonate-")) {
                          seen.emplace(name, value);
                        }
                      }
                      res.set_content("{}", "application/json");
                    });
  TempDir dir;
  dir.Write("ca.crt", ca_->cert_pem);
  const std::string path = dir.Write(
      "config",
      absl::StrCat("current-context: t\nclusters:\n- name: c\n  cluster:\n"
                   "    server: ",
                   server.url(),
                   "\n    certificate-authority: ca.crt\n"
                   "users:\n- name: u\n  user:\n    token: t0k\n"
                   "    as: jane@example.com\n    as-uid: uid-42\n"
                   "    as-groups: [devs, \"system:authenticated\"]\n"
                   "    as-user-extra:\n      example.com/scopes: [read, "
                   "write]\n      100%: [x]\n"
                   "contexts:\n- name: t\n  context: {cluster: c, user: u}\n"));
  absl::StatusOr<config::ApiServerConfig> config = config::LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  auto transport = MustCreate(*config);
  absl::StatusOr<Response> got = transport->Do({.path = "/x"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);

  std::lock_guard lock(mu);
  auto values = [&](const std::string& name) {
    std::vector<std::string> out;
    auto [begin, end] = seen.equal_range(name);
    for (auto it = begin; it != end; ++it) out.push_back(it->second);
    return out;
  };
  EXPECT_THAT(values("Impersonate-User"), ElementsAre("jane@example.com"));
  EXPECT_THAT(values("Impersonate-Uid"), ElementsAre("uid-42"));
  EXPECT_THAT(values("Impersonate-Group"),
              ElementsAre("devs", "system:authenticated"));
  EXPECT_THAT(values("Impersonate-Extra-example.com%2Fscopes"),
              ElementsAre("read", "write"));
  EXPECT_THAT(values("Impersonate-Extra-100%25"), ElementsAre("x"));
  EXPECT_EQ(seen.size(), 7u);
}

TEST_F(TlsIdentityTest, CreateRefusesImpersonationThatCannotBeAHeader) {
  config::ApiServerConfig config;
  config.server = "https://127.0.0.1:6443";
  config.source = "test";
  config.impersonation.user = "jane\r\nImpersonate-Group: system:masters";
  absl::StatusOr<std::unique_ptr<TlsTransport>> t =
      TlsTransport::Create(config);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), ::testing::HasSubstr("control character"));
  config.impersonation = {.groups = {"devs"}};
  EXPECT_THAT(TlsTransport::Create(config).status().message(),
              ::testing::HasSubstr("needs `as`"));
}

// The common name of the client certificate a request came with.
std::string PeerName(const httplib::Request& req) {
  X509* cert = SSL_get1_peer_certificate(req.ssl);
  if (cert == nullptr) return "";
  char name[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name,
                            sizeof(name));
  X509_free(cert);
  return name;
}

// A client certificate pair replaced on disk is presented by the next
// request, on a new connection; a pair half-replaced (the key not matching
// the certificate) keeps the previous one and is logged once.
TEST_F(TlsIdentityTest, RotatedClientCertificateIsUsedByTheNextConnection) {
  HttpsTestServer server(*server_cert_, ca_->cert_pem);
  std::mutex mu;
  std::vector<std::string> names;
  server.http().Get("/x",
                    [&](const httplib::Request& req, httplib::Response& res) {
                      std::lock_guard lock(mu);
                      names.push_back(PeerName(req));
                      res.set_content("{}", "application/json");
                    });
  // Names of different lengths, so each pair differs in size on disk too.
  const KeyPair first = tls_test::MakeLeaf(*ca_, "node-a", false);
  const KeyPair second = tls_test::MakeLeaf(*ca_, "node-bb", false);
  const KeyPair third = tls_test::MakeLeaf(*ca_, "node-ccc", false);
  TempDir dir;
  config::ApiServerConfig config;
  config.server = server.url();
  config.ca_pem = ca_->cert_pem;
  config.source = "test";
  config.client_cert_file = dir.Write("client.crt", first.cert_pem);
  config.client_key_file = dir.Write("client.key", first.key_pem);
  config.client_cert_pem = first.cert_pem;
  config.client_key_pem = first.key_pem;
  auto transport = MustCreate(config);

  const std::string log_path = dir.path() + "/log";
  const int log_fd = ::open(log_path.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(log_fd, 0);
  common::SetLogFd(log_fd);
  auto get = [&] {
    absl::StatusOr<Response> got = transport->Do({.path = "/x"});
    EXPECT_TRUE(got.ok()) << got.status();
  };
  get();
  get();  // same connection, same certificate
  dir.Write("client.crt", second.cert_pem);
  dir.Write("client.key", second.key_pem);
  get();
  // Half a rotation: a new certificate beside the old key.
  dir.Write("client.crt", third.cert_pem);
  get();
  get();
  dir.Write("client.key", third.key_pem);
  get();
  common::SetLogFd(2);
  ::close(log_fd);

  std::lock_guard lock(mu);
  EXPECT_THAT(names, ElementsAre("node-a", "node-a", "node-bb", "node-bb",
                                 "node-bb", "node-ccc"));
  EXPECT_EQ(transport->certificate_reloads(), 2);
  EXPECT_EQ(transport->connections_opened(), 3);
  const std::string log = dir.Read("log");
  size_t warnings = 0;
  for (size_t at = log.find("do not load as a pair"); at != std::string::npos;
       at = log.find("do not load as a pair", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 1u) << log;
  EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr("PRIVATE KEY")));
}

}  // namespace
}  // namespace gpulet::kube
