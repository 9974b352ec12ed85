#include "src/net/kube/api_client.h"

#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/file_util.h"

namespace gpulet::kube {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class ApiClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/apic.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A kubeconfig whose one cluster has `server`; returns its path.
  std::string Kubeconfig(const std::string& server,
                         const std::string& user = "{token: abc}") {
    const std::string path = dir_ + "/config";
    const std::string text = absl::StrCat(
        "apiVersion: v1\nkind: Config\ncurrent-context: main\n"
        "clusters:\n- name: c1\n  cluster: {server: \"",
        server, "\"}\nusers:\n- name: u1\n  user: ", user,
        "\ncontexts:\n- name: main\n  context: {cluster: c1, user: u1}\n");
    EXPECT_TRUE(common::WriteFileAtomic(path, text, {.durable = false}).ok());
    return path;
  }

  std::string dir_;
};

TEST_F(ApiClientTest, MissingKubeconfigNamesThePath) {
  ApiClientOptions options;
  options.kubeconfig = dir_ + "/absent";
  absl::StatusOr<std::unique_ptr<ApiClient>> api = MakeApiClient(options);
  ASSERT_FALSE(api.ok());
  EXPECT_THAT(api.status().message(), HasSubstr(options.kubeconfig));
}

TEST_F(ApiClientTest, PlainHttpServerNamesTheField) {
  ApiClientOptions options;
  options.kubeconfig = Kubeconfig("http://api.example:6443");
  absl::StatusOr<std::unique_ptr<ApiClient>> api = MakeApiClient(options);
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(api.status().message(),
              AllOf(HasSubstr(options.kubeconfig), HasSubstr(".server")));
}

TEST_F(ApiClientTest, MalformedServerUrlNamesTheSourceAndServer) {
  ApiClientOptions options;
  options.kubeconfig = Kubeconfig("https://user@api.example:6443");
  absl::StatusOr<std::unique_ptr<ApiClient>> api = MakeApiClient(options);
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(api.status().message(),
              AllOf(HasSubstr(options.kubeconfig),
                    HasSubstr("server \"https://user@api.example:6443\"")));
}

TEST_F(ApiClientTest, NoKubeconfigOutsideAPodNamesTheVariables) {
  ApiClientOptions options;
  options.in_cluster.service_account_dir = dir_;
  options.in_cluster.getenv = [](const std::string&) {
    return std::optional<std::string>();
  };
  absl::StatusOr<std::unique_ptr<ApiClient>> api = MakeApiClient(options);
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(api.status().message(), HasSubstr("KUBERNETES_SERVICE_HOST"));
}

TEST_F(ApiClientTest, GoodKubeconfigMakesAClientWithoutConnecting) {
  ApiClientOptions options;
  options.kubeconfig = Kubeconfig("https://127.0.0.1:1");
  options.client.max_attempts = 1;
  absl::StatusOr<std::unique_ptr<ApiClient>> api = MakeApiClient(options);
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_EQ((*api)->server(), "https://127.0.0.1:1");
  EXPECT_EQ((*api)->source(), absl::StrCat("kubeconfig ", options.kubeconfig));
}

// gpulet's node and cluster components do not run a program named in a
// kubeconfig; kubectl-gpulet (allow_exec_plugin) does, at its first request.
TEST_F(ApiClientTest, ExecPluginOnlyWhereAllowed) {
  ApiClientOptions options;
  options.kubeconfig = Kubeconfig(
      "https://127.0.0.1:1",
      "{exec: {apiVersion: client.authentication.k8s.io/v1, command: "
      "/nonexistent/plugin, interactiveMode: Never}}");
  absl::StatusOr<std::unique_ptr<ApiClient>> api = MakeApiClient(options);
  EXPECT_EQ(api.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(api.status().message(),
              AllOf(HasSubstr(options.kubeconfig), HasSubstr("user \"u1\""),
                    HasSubstr("exec credential plugin")));
  options.allow_exec_plugin = true;
  api = MakeApiClient(options);
  ASSERT_TRUE(api.ok()) << api.status();
}

}  // namespace
}  // namespace gpulet::kube
