// ExecPlugin running small shell scripts as credential plugins: what the
// plugin sees (argv, environment, KUBERNETES_EXEC_INFO, standard input),
// what comes back, and every way a run fails.
#include "src/net/kube/exec_plugin.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "src/net/testing/plugin_scripts.h"

namespace gpulet::kube {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

// Answers with `status` in the apiVersion it was asked for, after saving
// its environment, its KUBERNETES_EXEC_INFO and its arguments.
std::string Answering(const std::string& dir, const std::string& status) {
  return absl::StrCat(
      "env > ", dir, "/env\n", "printf '%s' \"$KUBERNETES_EXEC_INFO\" > ", dir,
      "/info\n", "echo \"$@\" > ", dir, "/args\n",
      "api=$(printf '%s' \"$KUBERNETES_EXEC_INFO\" | "
      "sed 's/.*\"apiVersion\":\"\\([^\"]*\\)\".*/\\1/')\n",
      "printf '{\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\",\"status\":",
      status, "}' \"$api\"");
}

class ExecPluginTest : public ::testing::Test {
 protected:
  config::ExecConfig Exec(
      const std::string& command,
      config::InteractiveMode mode = config::InteractiveMode::kNever) {
    config::ExecConfig exec;
    exec.user = "eks-user";
    exec.api_version = config::kExecApiV1;
    exec.command = command;
    exec.interactive_mode = mode;
    exec.base_dir = scripts_.dir();
    return exec;
  }

  ExecPluginOptions Options() {
    ExecPluginOptions options;
    options.environment = std::vector<std::string>{
        "PATH=" + scripts_.dir() + ":/usr/bin:/bin", "HOME=/home/u"};
    options.stdin_is_terminal = false;
    return options;
  }

  absl::StatusOr<ExecCredential> Run(const config::ExecConfig& exec,
                                     const ExecPluginOptions& options) {
    return ExecPlugin(exec, {"https://10.0.0.1:6443", "CA"}, options).Run();
  }

  Json Info() { return Json::parse(scripts_.Read("info")); }

  std::vector<std::string> Env() {
    return absl::StrSplit(scripts_.Read("env"), '\n', absl::SkipEmpty());
  }

  testing::PluginScripts scripts_;
};

TEST_F(ExecPluginTest, TokenFromAPluginFoundInPath) {
  scripts_.Script("get-token", Answering(scripts_.dir(), R"({"token":"t1"})"));
  config::ExecConfig exec = Exec("get-token");
  exec.args = {"eks", "get-token", "--cluster-name", "prod"};
  absl::StatusOr<ExecCredential> cred = Run(exec, Options());
  ASSERT_TRUE(cred.ok()) << cred.status();
  EXPECT_EQ(cred->token, "t1");
  EXPECT_EQ(scripts_.Read("args"), "eks get-token --cluster-name prod\n");

  exec.api_version = config::kExecApiV1beta1;
  cred = Run(exec, Options());
  ASSERT_TRUE(cred.ok()) << cred.status();
  EXPECT_EQ(Info()["apiVersion"], config::kExecApiV1beta1);
}

TEST_F(ExecPluginTest, ClientCertificatePair) {
  scripts_.Script(
      "cert",
      Answering(scripts_.dir(),
                R"({"clientCertificateData":"C","clientKeyData":"K"})"));
  absl::StatusOr<ExecCredential> cred = Run(Exec("cert"), Options());
  ASSERT_TRUE(cred.ok()) << cred.status();
  EXPECT_EQ(cred->client_cert_pem, "C");
  EXPECT_EQ(cred->client_key_pem, "K");
}

TEST_F(ExecPluginTest, TheEnvironmentThePluginSees) {
  scripts_.Script("p", Answering(scripts_.dir(), R"({"token":"t"})"));
  config::ExecConfig exec = Exec("p");
  exec.env = {{"AWS_PROFILE", "ops"}, {"EXTRA", "a b"}};
  ExecPluginOptions options = Options();
  options.environment->push_back("AWS_PROFILE=default");
  options.environment->push_back("KUBERNETES_EXEC_INFO=stale");
  options.environment->push_back("KEEP=1");
  ASSERT_TRUE(Run(exec, options).ok());
  const std::vector<std::string> env = Env();
  EXPECT_THAT(env, Contains("HOME=/home/u"));
  EXPECT_THAT(env, Contains("KEEP=1"));
  EXPECT_THAT(env, Contains("AWS_PROFILE=ops"));
  EXPECT_THAT(env, Not(Contains("AWS_PROFILE=default")));
  EXPECT_THAT(env, Contains("EXTRA=a b"));
  EXPECT_THAT(env, Not(Contains("KUBERNETES_EXEC_INFO=stale")));
  EXPECT_EQ(Info(),
            Json::parse(R"({"apiVersion":"client.authentication.k8s.io/v1",
                "kind":"ExecCredential","spec":{"interactive":false}})"));

  exec.provide_cluster_info = true;
  ASSERT_TRUE(Run(exec, options).ok());
  EXPECT_EQ(Info()["spec"]["cluster"]["server"], "https://10.0.0.1:6443");
  EXPECT_EQ(Info()["spec"]["cluster"]["certificate-authority-data"], "Q0E=");
}

TEST_F(ExecPluginTest, InteractiveModeRules) {
  scripts_.Script("p", Answering(scripts_.dir(), R"({"token":"t"})"));
  using Mode = config::InteractiveMode;
  const struct {
    Mode mode;
    bool terminal;
    bool interactive;
  } kCases[] = {
      {Mode::kNever, false, false},       {Mode::kNever, true, false},
      {Mode::kIfAvailable, false, false}, {Mode::kIfAvailable, true, true},
      {Mode::kAlways, true, true},
  };
  for (const auto& c : kCases) {
    ExecPluginOptions options = Options();
    options.stdin_is_terminal = c.terminal;
    ASSERT_TRUE(Run(Exec("p", c.mode), options).ok());
    EXPECT_EQ(Info()["spec"]["interactive"], c.interactive)
        << static_cast<int>(c.mode) << " " << c.terminal;
  }
  // Always without a terminal: an error, and the plugin never starts.
  std::filesystem::remove(scripts_.dir() + "/info");
  absl::StatusOr<ExecCredential> cred =
      Run(Exec("p", Mode::kAlways), Options());
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(cred.status().message(),
              HasSubstr("exec plugin \"p\" of kubeconfig user \"eks-user\": "
                        "interactiveMode is Always, but standard input is "
                        "not a terminal"));
  EXPECT_EQ(scripts_.Read("info"), "");
}

TEST_F(ExecPluginTest, NotInteractiveReadsNothingFromStandardInput) {
  scripts_.Script("p",
                  absl::StrCat("cat > ", scripts_.dir(), "/stdin\n",
                               Answering(scripts_.dir(), R"({"token":"t"})")));
  ASSERT_TRUE(Run(Exec("p"), Options()).ok());
  EXPECT_EQ(scripts_.Read("stdin"), "");
}

TEST_F(ExecPluginTest, RelativeCommandWithASlashIsRelativeToTheKubeconfig) {
  std::filesystem::create_directory(scripts_.dir() + "/bin");
  scripts_.Script("bin/p", Answering(scripts_.dir(), R"({"token":"rel"})"));
  absl::StatusOr<ExecCredential> cred = Run(Exec("bin/p"), Options());
  ASSERT_TRUE(cred.ok()) << cred.status();
  EXPECT_EQ(cred->token, "rel");
}

TEST_F(ExecPluginTest, CommandNotFoundGivesTheInstallHint) {
  config::ExecConfig exec = Exec("no-such-credential-plugin");
  exec.install_hint = "Install it with: apt install no-such-plugin";
  absl::StatusOr<ExecCredential> cred = Run(exec, Options());
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(cred.status().message(),
              HasSubstr("exec plugin \"no-such-credential-plugin\" of "
                        "kubeconfig user \"eks-user\": command not found in "
                        "PATH\nInstall it with: apt install no-such-plugin"));
  exec.command = "./missing";
  cred = Run(exec, Options());
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(cred.status().message(), HasSubstr("apt install"));
}

TEST_F(ExecPluginTest, FailureExitPassesStandardErrorThrough) {
  scripts_.Script("p", "echo 'token expired, run aws sso login' >&2; exit 3");
  const std::string err_path = scripts_.Write("stderr", "");
  ExecPluginOptions options = Options();
  options.stderr_fd = ::open(err_path.c_str(), O_WRONLY | O_CLOEXEC);
  absl::StatusOr<ExecCredential> cred = Run(Exec("p"), options);
  ::close(options.stderr_fd);
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(cred.status().message(),
              HasSubstr("exec plugin \"p\" of kubeconfig user \"eks-user\": "
                        "exit status 3"));
  EXPECT_EQ(scripts_.Read("stderr"), "token expired, run aws sso login\n");
}

TEST_F(ExecPluginTest, BadAnswers) {
  scripts_.Script("garbage", "echo 'secret-token'");
  absl::StatusOr<ExecCredential> cred = Run(Exec("garbage"), Options());
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cred.status().message(), HasSubstr("exec plugin \"garbage\""));
  EXPECT_THAT(cred.status().message(), Not(HasSubstr("secret")));

  scripts_.Script(
      "old", R"(echo '{"apiVersion":"client.authentication.k8s.io/v1beta1",)"
             R"("kind":"ExecCredential","status":{"token":"secret"}}')");
  cred = Run(Exec("old"), Options());
  EXPECT_THAT(cred.status().message(),
              HasSubstr("has apiVersion \"client.authentication.k8s.io/"
                        "v1beta1\", but the kubeconfig asked for "
                        "client.authentication.k8s.io/v1"));

  scripts_.Script("big", "exec yes");
  ExecPluginOptions options = Options();
  options.max_output = 4096;
  cred = Run(Exec("big"), options);
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(cred.status().message(), HasSubstr("more than 4096 bytes"));
}

TEST_F(ExecPluginTest, TimeoutKillsAndReapsThePlugin) {
  scripts_.Script("slow",
                  absl::StrCat("echo $$ > ", scripts_.dir(), "/pid.tmp; mv ",
                               scripts_.dir(), "/pid.tmp ", scripts_.dir(),
                               "/pid; exec sleep 600"));
  ExecPluginOptions options = Options();
  options.timeout = absl::Seconds(2);
  absl::StatusOr<ExecCredential> cred = Run(Exec("slow"), options);
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(cred.status().message(),
              HasSubstr("exec plugin \"slow\" of kubeconfig user "
                        "\"eks-user\": "));
  EXPECT_THAT(cred.status().message(), HasSubstr("did not finish in time"));
  const pid_t pid = scripts_.Pid("pid");
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(testing::ProcessGone(pid));
}

}  // namespace
}  // namespace gpulet::kube
