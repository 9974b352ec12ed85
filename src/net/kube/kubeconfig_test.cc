#include "src/net/kube/kubeconfig.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"

namespace gpulet::config {
namespace {

using ::testing::HasSubstr;

std::string Kubeconfig(const std::string& cluster, const std::string& user,
                       const std::string& extra_context = "") {
  return absl::StrCat(R"(apiVersion: v1
kind: Config
current-context: main
clusters:
- name: other
  cluster: {server: "https://10.0.0.9:6443"}
- name: c1
  cluster:
)",
                      cluster, R"(
users:
- name: u1
  user:
)",
                      user, R"(
contexts:
- name: main
  context: {cluster: c1, user: u1, namespace: gpus}
)",
                      extra_context);
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kcfg.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    EXPECT_TRUE(common::WriteFileAtomic(p, text, {.durable = false}).ok());
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(KubeconfigTest, SelectsCurrentContextWithInlineData) {
  const std::string ca = absl::Base64Escape("CA PEM");
  const std::string cert = absl::Base64Escape("CERT PEM");
  const std::string key = absl::Base64Escape("KEY PEM");
  absl::StatusOr<KubeconfigSelection> sel = ParseKubeconfig(
      Kubeconfig(absl::StrCat("    server: https://127.0.0.1:6443/\n"
                              "    certificate-authority-data: ",
                              ca),
                 absl::StrCat("    client-certificate-data: ", cert,
                              "\n    client-key-data: ", key)),
      "k.yaml");
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->config.server, "https://127.0.0.1:6443");
  EXPECT_EQ(sel->config.ca_pem, "CA PEM");
  EXPECT_EQ(sel->config.client_cert_pem, "CERT PEM");
  EXPECT_EQ(sel->config.client_key_pem, "KEY PEM");
  EXPECT_EQ(sel->config.namespace_name, "gpus");
  EXPECT_EQ(sel->config.source, "kubeconfig k.yaml");
}

TEST(KubeconfigTest, ExplicitContextWins) {
  absl::StatusOr<KubeconfigSelection> sel =
      ParseKubeconfig(Kubeconfig("    server: https://a:1", "    token: abc",
                                 "- name: alt\n  context: {cluster: other}\n"),
                      "k.yaml", "alt");
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->config.server, "https://10.0.0.9:6443");
  EXPECT_EQ(sel->config.token, "");
  EXPECT_EQ(sel->config.namespace_name, "default");
}

TEST(KubeconfigTest, ErrorsNameTheField) {
  struct Case {
    std::string cluster, user, context, want;
  };
  const Case cases[] = {
      {"    server: https://a:1\n    insecure-skip-tls-verify: true", "", "",
       "clusters[1].cluster.insecure-skip-tls-verify: not supported"},
      {"    server: https://a:1\n    insecure-skip-tls-verify: yes", "", "",
       "insecure-skip-tls-verify: not supported"},
      {"    server: http://a:1", "", "",
       "clusters[1].cluster.server: must be an https:// URL"},
      {"    certificate-authority: /ca", "", "",
       "clusters[1].cluster.server: missing"},
      {"    server: https://a:1", "    client-key-data: '!!!'", "",
       "users[0].user.client-key-data: not valid base64"},
      {"    server: https://a:1", "    client-certificate: /c", "",
       "users[0].user: client-certificate and client-key go together"},
      {"    server: https://a:1", "    exec: {command: aws}", "",
       "users[0].user.exec.apiVersion: missing"},
      {"    server: https://a:1", "    username: admin", "",
       "users[0].user.username: not supported"},
      {"    server: https://a:1", "    token: [1]", "",
       "users[0].user.token: expected a string"},
      // Fields gpulet does not know could change the identity: refused.
      {"    server: https://a:1", "    token: t\n    act-as: root", "",
       "users[0].user.act-as: unknown field"},
      {"    server: https://a:1", "    as-groups: [system:masters]", "",
       "users[0].user.as-groups: needs `as`"},
      {"    server: https://a:1", "", "missing",
       "context: no entry named \"missing\" in contexts"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<KubeconfigSelection> sel = ParseKubeconfig(
        Kubeconfig(c.cluster, c.user.empty() ? "    {}" : c.user), "k.yaml",
        c.context);
    ASSERT_FALSE(sel.ok()) << c.want;
    EXPECT_EQ(sel.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(sel.status().message(), HasSubstr("k.yaml: "));
    EXPECT_THAT(sel.status().message(), HasSubstr(c.want));
  }
}

// Impersonation is honoured, not dropped; extensions change nothing and are
// let through.
TEST(KubeconfigTest, ReadsImpersonation) {
  absl::StatusOr<KubeconfigSelection> sel = ParseKubeconfig(
      Kubeconfig("    server: https://a:1",
                 "    token: t\n    as: jane\n    as-uid: \"7\"\n"
                 "    as-groups: [devs]\n    as-user-extra: {team: [gpu]}\n"
                 "    extensions: [{name: x, extension: {}}]"),
      "k.yaml");
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->config.impersonation,
            (Impersonation{.user = "jane",
                           .uid = "7",
                           .groups = {"devs"},
                           .extra = {{"team", {"gpu"}}}}));
}

// -data wins over a file, as in kubectl; only a file is kept to re-read.
TEST(KubeconfigTest, InlineDataIsNotReRead) {
  absl::StatusOr<KubeconfigSelection> sel = ParseKubeconfig(
      Kubeconfig("    server: https://a:1",
                 "    client-certificate: c.pem\n    client-key: k.pem\n"
                 "    client-certificate-data: Q0VSVA==\n"
                 "    client-key-data: S0VZ"),
      "k.yaml");
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->config.client_cert_pem, "CERT");
  EXPECT_EQ(sel->config.client_cert_file, "");
  EXPECT_EQ(sel->config.client_key_file, "");
  sel = ParseKubeconfig(Kubeconfig("    server: https://a:1",
                                   "    client-certificate: c.pem\n"
                                   "    client-key: k.pem"),
                        "k.yaml");
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->config.client_cert_file, "c.pem");  // as written
  EXPECT_EQ(sel->config.client_key_file, "k.pem");
}

TEST(KubeconfigTest, MissingClusterIsNamed) {
  absl::StatusOr<KubeconfigSelection> sel = ParseKubeconfig(
      "current-context: x\ncontexts:\n- name: x\n  context: {cluster: nope}\n",
      "k.yaml");
  ASSERT_FALSE(sel.ok());
  EXPECT_THAT(sel.status().message(),
              HasSubstr("contexts[0].context.cluster: no entry named "
                        "\"nope\" in clusters"));
}

TEST(KubeconfigTest, LoadReadsFilesRelativeToTheKubeconfig) {
  TempDir dir;
  dir.Write("ca.pem", "CA");
  dir.Write("c.pem", "CERT");
  dir.Write("k.pem", "KEY");
  std::string path = dir.Write(
      "config",
      Kubeconfig("    server: https://a:1\n    certificate-authority: ca.pem",
                 absl::StrCat("    client-certificate: c.pem\n"
                              "    client-key: ",
                              dir.path(), "/k.pem\n    tokenFile: tok")));
  absl::StatusOr<ApiServerConfig> config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->ca_pem, "CA");
  EXPECT_EQ(config->client_cert_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
  EXPECT_EQ(config->client_cert_file, dir.path() + "/c.pem");
  EXPECT_EQ(config->client_key_file, dir.path() + "/k.pem");
  EXPECT_EQ(config->token_file, dir.path() + "/tok");
}

// A kubeconfig given is the one read (its errors, not the service
// account's, come back).
TEST(KubeconfigTest, ApiServerConfigReadsTheKubeconfigGiven) {
  TempDir dir;
  dir.Write("ca.pem", "CA");
  std::string path = dir.Write(
      "config",
      Kubeconfig("    server: https://a:1\n    certificate-authority: ca.pem",
                 "    {}"));
  absl::StatusOr<ApiServerConfig> config = LoadApiServerConfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->ca_pem, "CA");
  absl::StatusOr<ApiServerConfig> missing =
      LoadApiServerConfig(dir.path() + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("/nope"));
}

TEST(KubeconfigTest, LoadNamesAMissingFile) {
  TempDir dir;
  std::string path = dir.Write(
      "config",
      Kubeconfig("    server: https://a:1\n    certificate-authority: ca.pem",
                 "    {}"));
  absl::StatusOr<ApiServerConfig> config = LoadKubeconfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr("certificate-authority"));
  EXPECT_THAT(config.status().message(), HasSubstr("ca.pem"));
}

TEST(InClusterConfigTest, ReadsTheServiceAccount) {
  TempDir dir;
  dir.Write("ca.crt", "CA");
  dir.Write("token", "secret-token\n");
  dir.Write("namespace", "kube-system\n");
  std::map<std::string, std::string> env = {
      {"KUBERNETES_SERVICE_HOST", "fd00::1"},
      {"KUBERNETES_SERVICE_PORT", "443"}};
  InClusterOptions options;
  options.service_account_dir = dir.path();
  options.getenv = [&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  absl::StatusOr<ApiServerConfig> config = LoadInClusterConfig(options);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://[fd00::1]:443");
  EXPECT_EQ(config->ca_pem, "CA");
  EXPECT_EQ(config->token, "");
  EXPECT_EQ(config->token_file, dir.path() + "/token");
  EXPECT_EQ(config->namespace_name, "kube-system");

  env.erase("KUBERNETES_SERVICE_PORT");
  config = LoadInClusterConfig(options);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(config.status().message(), HasSubstr("KUBERNETES_SERVICE_PORT"));
}

TEST(InClusterConfigTest, RejectsAnEmptyToken) {
  TempDir dir;
  dir.Write("ca.crt", "CA");
  dir.Write("token", " \n");
  InClusterOptions options;
  options.service_account_dir = dir.path();
  options.getenv = [](const std::string&) -> std::optional<std::string> {
    return "1";
  };
  absl::StatusOr<ApiServerConfig> config = LoadInClusterConfig(options);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("is empty"));
}

}  // namespace
}  // namespace gpulet::config
