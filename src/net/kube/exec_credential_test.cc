// The ExecCredential documents: KUBERNETES_EXEC_INFO and the plugin's
// answer, table-tested.
#include "src/net/kube/exec_credential.h"

#include <string>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace gpulet::kube {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

constexpr char kWho[] = "exec plugin \"p\" of kubeconfig user \"u\"";

config::ExecConfig Exec(const std::string& api) {
  config::ExecConfig exec;
  exec.api_version = api;
  exec.command = "p";
  exec.user = "u";
  return exec;
}

TEST(ExecCredentialTest, ExecInfoCarriesInteractiveAndClusterOnRequest) {
  config::ExecConfig exec = Exec(config::kExecApiV1);
  const ExecClusterInfo cluster{"https://10.0.0.1:6443", "CA PEM"};
  EXPECT_EQ(Json::parse(ExecInfoJson(exec, false, cluster)),
            Json::parse(R"({"apiVersion":"client.authentication.k8s.io/v1",
                "kind":"ExecCredential","spec":{"interactive":false}})"));

  exec.api_version = config::kExecApiV1beta1;
  exec.provide_cluster_info = true;
  exec.cluster_config_json = R"({"audience":"prod"})";
  const Json info = Json::parse(ExecInfoJson(exec, true, cluster));
  EXPECT_EQ(info["apiVersion"], config::kExecApiV1beta1);
  EXPECT_EQ(info["spec"]["interactive"], true);
  EXPECT_EQ(info["spec"]["cluster"]["server"], "https://10.0.0.1:6443");
  EXPECT_EQ(info["spec"]["cluster"]["certificate-authority-data"],
            absl::Base64Escape("CA PEM"));
  EXPECT_EQ(info["spec"]["cluster"]["config"]["audience"], "prod");
}

TEST(ExecCredentialTest, ReadsTokenCertificateAndExpiry) {
  absl::StatusOr<ExecCredential> cred = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
          "status":{"token":"t0k","expirationTimestamp":"2030-01-02T03:04:05Z"}})",
      config::kExecApiV1, kWho);
  ASSERT_TRUE(cred.ok()) << cred.status();
  EXPECT_EQ(cred->token, "t0k");
  EXPECT_EQ(cred->expiry, absl::FromUnixSeconds(1893553445));

  cred = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1",
          "kind":"ExecCredential","status":{"clientCertificateData":"CERT",
          "clientKeyData":"KEY"}})",
      config::kExecApiV1beta1, kWho);
  ASSERT_TRUE(cred.ok()) << cred.status();
  EXPECT_EQ(cred->client_cert_pem, "CERT");
  EXPECT_EQ(cred->client_key_pem, "KEY");
  EXPECT_EQ(cred->token, "");
  EXPECT_EQ(cred->expiry, absl::InfiniteFuture());
}

TEST(ExecCredentialTest, AnswersThatBreakTheContractAndNeverQuoteIt) {
  const std::string v1 = R"("apiVersion":"client.authentication.k8s.io/v1")";
  const struct {
    std::string answer;
    std::string error;
  } kCases[] = {
      {"secret-token-not-json", "is not a JSON ExecCredential object"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1beta1",)"
       R"("kind":"ExecCredential","status":{"token":"secret-token"}})",
       "has apiVersion \"client.authentication.k8s.io/v1beta1\", but the "
       "kubeconfig asked for client.authentication.k8s.io/v1"},
      {R"({"kind":"ExecCredential","status":{"token":"secret-token"}})",
       "has apiVersion (none)"},
      {"{" + v1 + R"(,"kind":"Other","status":{"token":"secret-token"}})",
       "is not of kind ExecCredential"},
      {"{" + v1 + R"(,"kind":"ExecCredential"})", "has no status"},
      {"{" + v1 + R"(,"kind":"ExecCredential","status":{}})",
       "has neither status.token nor a client certificate"},
      {"{" + v1 +
           R"(,"kind":"ExecCredential","status":{"clientKeyData":"secret-token"}})",
       "has only one of status.clientCertificateData"},
      {"{" + v1 + R"(,"kind":"ExecCredential","status":{"token":7}})",
       "has status.token not a string"},
      {"{" + v1 +
           R"(,"kind":"ExecCredential","status":{"token":"secret-token\nX: y"}})",
       "a status.token with a line break"},
      {"{" + v1 +
           R"(,"kind":"ExecCredential","status":{"token":"secret-token",)"
           R"("expirationTimestamp":"tomorrow"}})",
       "status.expirationTimestamp \"tomorrow\", not an RFC 3339 time"},
      {"{" + v1 + R"(,"kind":"ExecCredential","status":{"token":"secret-tok)",
       "is not a JSON ExecCredential object"},
  };
  for (const auto& c : kCases) {
    absl::StatusOr<ExecCredential> cred =
        ParseExecCredential(c.answer, config::kExecApiV1, kWho);
    EXPECT_EQ(cred.status().code(), absl::StatusCode::kInvalidArgument)
        << c.answer;
    EXPECT_THAT(cred.status().message(), HasSubstr(kWho));
    EXPECT_THAT(cred.status().message(), HasSubstr(c.error)) << c.answer;
    EXPECT_THAT(cred.status().message(), Not(HasSubstr("secret")));
  }
}

}  // namespace
}  // namespace gpulet::kube
