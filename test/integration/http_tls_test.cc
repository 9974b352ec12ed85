// gpulet's HTTP server (src/http) over TLS, with a CA and certificates
// made by the test: a client trusting the CA gets answers, a client
// trusting another CA is refused, a replaced certificate is served to new
// connections without a restart, and the key never appears in the log.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "src/common/file_util.h"
#include "src/http/server.h"
#include "src/kube/test_tls.h"

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
    ASSERT_TRUE(common::WriteFileAtomic(Path(name), text, {.durable = false})
                    .ok());
  }
  void Install(const tls::KeyPair& leaf) {
    Write("tls.crt", leaf.cert_pem);
    Write("tls.key", leaf.key_pem);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::unique_ptr<Server> Start() {
    ServerOptions options;
    options.address = "127.0.0.1:0";
    options.tls_cert_file = Path("tls.crt");
    options.tls_key_file = Path("tls.key");
    absl::StatusOr<std::unique_ptr<Server>> s =
        Server::Start(options, [](const Request& r) {
          return Response{.status = 200,
                          .content_type = "text/plain",
                          .body = absl::StrCat("hello ", r.path)};
        });
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  // GET over TLS trusting only the CA in `ca_file`; the body, or "" when
  // the connection failed.
  static std::string Get(int port, const std::string& ca_file) {
    httplib::SSLClient client("127.0.0.1", port);
    client.set_ca_cert_path(ca_file.c_str());
    client.enable_server_certificate_verification(true);
    auto res = client.Post("/filter", "{}", "application/json");
    return res ? res->body : "";
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

}  // namespace
}  // namespace gpulet::http
