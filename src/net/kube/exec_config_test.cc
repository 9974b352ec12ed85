// A kubeconfig user's `exec` section as ParseKubeconfig reads it.
#include "src/net/kube/exec_config.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/net/kube/kubeconfig.h"

namespace gpulet::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

absl::StatusOr<KubeconfigSelection> Parse(
    const std::string& user, const std::string& cluster_extra = "") {
  return ParseKubeconfig(absl::StrCat(R"(current-context: main
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443
)",
                                      cluster_extra, R"(
users:
- name: eks-user
  user:
)",
                                      user, R"(
contexts:
- name: main
  context: {cluster: c1, user: eks-user}
)"),
                         "/k/config");
}

TEST(ExecConfigTest, ReadsEveryFieldOfTheContract) {
  absl::StatusOr<KubeconfigSelection> sel = Parse(R"(    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
      args: [eks, get-token, --cluster-name, prod]
      env:
      - {name: AWS_PROFILE, value: ops}
      - {name: EMPTY, value: ""}
      installHint: install the AWS CLI
      provideClusterInfo: true
      interactiveMode: Never)",
                                                  R"(    extensions:
    - name: other
      extension: {x: 1}
    - name: client.authentication.k8s.io/exec
      extension: {audience: prod})");
  ASSERT_TRUE(sel.ok()) << sel.status();
  ASSERT_TRUE(sel->config.exec.has_value());
  const ExecConfig& exec = *sel->config.exec;
  EXPECT_EQ(exec.user, "eks-user");
  EXPECT_EQ(exec.api_version, kExecApiV1);
  EXPECT_EQ(exec.command, "aws");
  EXPECT_THAT(exec.args,
              ElementsAre("eks", "get-token", "--cluster-name", "prod"));
  EXPECT_THAT(exec.env,
              ElementsAre(Pair("AWS_PROFILE", "ops"), Pair("EMPTY", "")));
  EXPECT_EQ(exec.install_hint, "install the AWS CLI");
  EXPECT_TRUE(exec.provide_cluster_info);
  EXPECT_EQ(exec.interactive_mode, InteractiveMode::kNever);
  EXPECT_EQ(exec.cluster_config_json, R"({"audience":"prod"})");
  EXPECT_TRUE(sel->config.token.empty());
}

TEST(ExecConfigTest, InteractiveModeIsRequiredWithV1Only) {
  absl::StatusOr<KubeconfigSelection> sel = Parse(
      "    exec: {apiVersion: client.authentication.k8s.io/v1beta1, "
      "command: kubelogin}");
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->config.exec->interactive_mode, InteractiveMode::kIfAvailable);
  EXPECT_FALSE(sel->config.exec->provide_cluster_info);

  sel = Parse(
      "    exec: {apiVersion: client.authentication.k8s.io/v1beta1, "
      "command: x, interactiveMode: Always}");
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(sel->config.exec->interactive_mode, InteractiveMode::kAlways);

  sel = Parse(
      "    exec: {apiVersion: client.authentication.k8s.io/v1, command: x}");
  EXPECT_THAT(sel.status().message(),
              HasSubstr("/k/config: users[0].user.exec.interactiveMode: "
                        "required with client.authentication.k8s.io/v1"));
}

TEST(ExecConfigTest, ErrorsNameTheField) {
  const struct {
    std::string exec;
    std::string error;
  } kCases[] = {
      {"{command: x, interactiveMode: Never}",
       "users[0].user.exec.apiVersion: missing"},
      {"{apiVersion: client.authentication.k8s.io/v1alpha1, command: x}",
       "users[0].user.exec.apiVersion: \"client.authentication.k8s.io/"
       "v1alpha1\" is not supported"},
      {"{apiVersion: client.authentication.k8s.io/v1, interactiveMode: "
       "Never}",
       "users[0].user.exec.command: missing"},
      {"{apiVersion: client.authentication.k8s.io/v1, command: x, "
       "interactiveMode: Sometimes}",
       "exec.interactiveMode: \"Sometimes\" is not one of"},
      {"{apiVersion: client.authentication.k8s.io/v1, command: x, "
       "interactiveMode: Never, env: [{name: A}]}",
       "exec.env[0]: expected {name:"},
      {"{apiVersion: client.authentication.k8s.io/v1, command: x, "
       "interactiveMode: Never, env: {A: b}}",
       "exec.env: expected a list"},
      {"{apiVersion: client.authentication.k8s.io/v1, command: x, "
       "interactiveMode: Never, args: [1]}",
       "exec.args[0]: expected a string"},
      {"{apiVersion: client.authentication.k8s.io/v1, command: x, "
       "interactiveMode: Never, provideClusterInfo: yes}",
       "exec.provideClusterInfo: expected true or false"},
      {"[x]", "users[0].user.exec: expected a map"},
  };
  for (const auto& c : kCases) {
    absl::StatusOr<KubeconfigSelection> sel =
        Parse(absl::StrCat("    exec: ", c.exec));
    EXPECT_EQ(sel.status().code(), absl::StatusCode::kInvalidArgument)
        << c.exec;
    EXPECT_THAT(sel.status().message(), HasSubstr(c.error)) << c.exec;
  }
}

TEST(ExecConfigTest, ExecIsTheUsersOnlyWayToAuthenticate) {
  absl::StatusOr<KubeconfigSelection> sel = Parse(
      "    token: abc\n    exec: {apiVersion: client.authentication.k8s.io/"
      "v1, command: x, interactiveMode: Never}");
  EXPECT_THAT(sel.status().message(),
              HasSubstr("users[0].user.exec: not together with token"));
}

}  // namespace
}  // namespace gpulet::config
