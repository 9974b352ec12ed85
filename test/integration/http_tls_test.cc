// gpulet's HTTP server (src/net/http) over TLS, with a CA and certificates
// made by the test: a client trusting the CA gets answers, a client
// trusting another CA is refused, a replaced certificate is served to new
// connections without a restart, and the key never appears in the log.
// With mutual TLS: a client without a certificate, with one of another
// CA, or with a name not allowed is refused; the right one is served; the
// open paths answer anyone.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "src/base/common/file_util.h"
#include "src/net/http/server.h"
#include "src/net/testing/test_tls.h"

namespace gpulet::http {
namespace {

namespace tls = kube::tls_test;
using ::testing::HasSubstr;

class HttpTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpulet-https-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ca_ = tls::MakeCa("test-ca");
    Write("ca.pem", ca_.cert_pem);
    Install(tls::MakeLeaf(ca_, "server", /*server=*/true));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(
        common::WriteFileAtomic(Path(name), text, {.durable = false}).ok());
  }
  void Install(const tls::KeyPair& leaf) {
    Write("tls.crt", leaf.cert_pem);
    Write("tls.key", leaf.key_pem);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // The server's TLS options: its certificate and key.
  ServerOptions TlsOptions() const {
    ServerOptions options;
    options.address = "127.0.0.1:0";
    options.tls_cert_file = Path("tls.crt");
    options.tls_key_file = Path("tls.key");
    return options;
  }

  // A server answering "hello <path>".
  static std::unique_ptr<Server> StartWith(const ServerOptions& options) {
    absl::StatusOr<std::unique_ptr<Server>> s =
        Server::Start(options, [](const Request& r) {
          return Response{.status = 200,
                          .content_type = "text/plain",
                          .body = absl::StrCat("hello ", r.path)};
        });
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  std::unique_ptr<Server> Start() { return StartWith(TlsOptions()); }

  // GET over TLS trusting only the CA in `ca_file`; the body, or "" when
  // the connection failed.
  static std::string Get(int port, const std::string& ca_file) {
    httplib::SSLClient client("127.0.0.1", port);
    client.set_ca_cert_path(ca_file.c_str());
    client.enable_server_certificate_verification(true);
    auto res = client.Post("/filter", "{}", "application/json");
    return res ? res->body : "";
  }

  // Mutual TLS: clients verified against client-ca.pem, `allowed` names,
  // /healthz open unless `strict`.
  std::unique_ptr<Server> StartMutual(std::vector<std::string> allowed,
                                      bool strict = false) {
    ServerOptions options = TlsOptions();
    options.client_ca_file = Path("client-ca.pem");
    options.allowed_client_names = std::move(allowed);
    if (!strict) options.open_paths = {"/healthz"};
    return StartWith(options);
  }

  // A client certificate named `name` signed by `ca`, written as
  // <file>.crt and <file>.key.
  void Client(const tls::KeyPair& ca, const std::string& name,
              const std::string& file) {
    const tls::KeyPair leaf = tls::MakeLeaf(ca, name, /*server=*/false);
    Write(file + ".crt", leaf.cert_pem);
    Write(file + ".key", leaf.key_pem);
  }

  // A request with the client certificate `file` ("" for none): "<status>
  // <body>", or "" when the connection failed.
  std::string Call(int port, const std::string& file, bool post) {
    std::unique_ptr<httplib::SSLClient> client;
    if (file.empty()) {
      client = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
    } else {
      client = std::make_unique<httplib::SSLClient>(
          "127.0.0.1", port, Path(file + ".crt"), Path(file + ".key"));
    }
    client->set_ca_cert_path(Path("ca.pem").c_str());
    client->enable_server_certificate_verification(true);
    auto res = post ? client->Post("/filter", "{}", "application/json")
                    : client->Get("/healthz");
    return res ? absl::StrCat(res->status, " ", res->body) : "";
  }

  std::string dir_;
  tls::KeyPair ca_;
};

TEST_F(HttpTlsTest, ServesToClientsTrustingTheCa) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->tls());
  EXPECT_EQ(Get(server->port(), Path("ca.pem")), "hello /filter");
  Write("other-ca.pem", tls::MakeCa("other").cert_pem);
  EXPECT_EQ(Get(server->port(), Path("other-ca.pem")), "");
}

TEST_F(HttpTlsTest, PlainHttpToATlsPortGetsNoAnswer) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  httplib::Client plain("127.0.0.1", server->port());
  EXPECT_FALSE(plain.Get("/healthz"));
}

TEST_F(HttpTlsTest, ARotatedCertificateIsServedWithoutARestart) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  const tls::KeyPair ca2 = tls::MakeCa("rotated-ca");
  Write("ca2.pem", ca2.cert_pem);
  Install(tls::MakeLeaf(ca2, "server", /*server=*/true));
  EXPECT_EQ(Get(server->port(), Path("ca2.pem")), "hello /filter");
  EXPECT_EQ(Get(server->port(), Path("ca.pem")), "");
}

TEST_F(HttpTlsTest, BadKeyFilesAreRefusedNamingTheFlag) {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.tls_cert_file = Path("tls.crt");
  options.tls_key_file = Path("ca.pem");  // not a key
  absl::StatusOr<std::unique_ptr<Server>> s =
      Server::Start(options, [](const Request&) { return Response{}; });
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(),
              HasSubstr(absl::StrCat("--tls-key-file ", Path("ca.pem"))));
  const tls::KeyPair other = tls::MakeLeaf(ca_, "other", true);
  Write("other.key", other.key_pem);
  options.tls_key_file = Path("other.key");
  s = Server::Start(options, [](const Request&) { return Response{}; });
  ASSERT_FALSE(s.ok());
  // OpenSSL finds the mismatch when the key is loaded, or the check after.
  EXPECT_THAT(s.status().message(),
              HasSubstr(absl::StrCat("--tls-key-file ", Path("other.key"))));
  EXPECT_THAT(s.status().message(), ::testing::Not(HasSubstr("PRIVATE KEY")));
}

TEST_F(HttpTlsTest, MutualTlsServesOnlyAllowedClientCertificates) {
  const tls::KeyPair client_ca = tls::MakeCa("client-ca");
  Write("client-ca.pem", client_ca.cert_pem);
  Client(client_ca, "system:kube-scheduler", "scheduler");
  Client(client_ca, "intruder", "intruder");
  Client(tls::MakeCa("other-client-ca"), "system:kube-scheduler", "forged");
  auto server = StartMutual({"system:kube-scheduler"});
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  EXPECT_EQ(Call(port, "scheduler", true), "200 hello /filter");
  // No certificate: the open path answers, the others are refused.
  EXPECT_EQ(Call(port, "", false), "200 hello /healthz");
  EXPECT_EQ(Call(port, "", true), "403 a client certificate is required\n");
  // A certificate of another CA fails the handshake.
  EXPECT_EQ(Call(port, "forged", true), "");
  EXPECT_EQ(Call(port, "forged", false), "");
  // The right CA, a name not allowed.
  EXPECT_EQ(Call(port, "intruder", true),
            "403 the client certificate's names are not allowed here\n");
}

TEST_F(HttpTlsTest, WithoutOpenPathsACertificateIsNeededToConnect) {
  const tls::KeyPair client_ca = tls::MakeCa("client-ca");
  Write("client-ca.pem", client_ca.cert_pem);
  Client(client_ca, "anyone", "anyone");
  auto server = StartMutual({}, /*strict=*/true);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Call(server->port(), "", false), "");
  EXPECT_EQ(Call(server->port(), "anyone", true), "200 hello /filter");
}

TEST_F(HttpTlsTest, AReplacedClientCaAppliesToNewConnections) {
  const tls::KeyPair old_ca = tls::MakeCa("old-client-ca");
  const tls::KeyPair new_ca = tls::MakeCa("new-client-ca");
  Write("client-ca.pem", old_ca.cert_pem);
  Client(old_ca, "scheduler", "old");
  Client(new_ca, "scheduler", "new");
  auto server = StartMutual({"scheduler"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Call(server->port(), "old", true), "200 hello /filter");
  EXPECT_EQ(Call(server->port(), "new", true), "");
  Write("client-ca.pem", new_ca.cert_pem);
  EXPECT_EQ(Call(server->port(), "new", true), "200 hello /filter");
  EXPECT_EQ(Call(server->port(), "old", true), "");
}

TEST_F(HttpTlsTest, AClientCaNeedsTlsAndMustLoad) {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.client_ca_file = Path("ca.pem");
  EXPECT_THAT(Server::Start(options, [](const Request&) { return Response{}; })
                  .status()
                  .message(),
              HasSubstr("--client-ca-file needs --tls-cert-file"));
  options.tls_cert_file = Path("tls.crt");
  options.tls_key_file = Path("tls.key");
  options.client_ca_file = Path("tls.key");  // not a certificate
  EXPECT_THAT(Server::Start(options, [](const Request&) { return Response{}; })
                  .status()
                  .message(),
              HasSubstr(absl::StrCat("--client-ca-file ", Path("tls.key"))));
}

}  // namespace
}  // namespace gpulet::http
