#include "src/cli/kubectl_command.h"

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::cli {
namespace {

using ::testing::HasSubstr;

struct Result {
  int rc;
  std::string out, err;
};

Result RunPlugin(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = RunKubectlGpulet(
      args, out, err, [](const std::string&) -> std::optional<std::string> {
        return std::nullopt;
      });
  return {rc, out.str(), err.str()};
}

TEST(KubectlCommandTest, Help) {
  Result r = RunPlugin({"--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_THAT(r.out, HasSubstr("Usage: kubectl gpulet status [NODE]"));
  EXPECT_EQ(RunPlugin({"status", "-h"}).rc, 0);
}

TEST(KubectlCommandTest, UsageErrorsExit2) {
  Result r = RunPlugin({"status", "-o", "yaml"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("--output: \"yaml\" is not table or json"));
  r = RunPlugin({"status", "--bogus"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown flag --bogus"));
  EXPECT_EQ(RunPlugin({"status", "--kubeconfig"}).rc, 2);
  EXPECT_EQ(RunPlugin({"inspect"}).rc, 2);
  EXPECT_EQ(RunPlugin({}).rc, 2);
  EXPECT_EQ(RunPlugin({"status", "a", "b"}).rc, 2);
}

TEST(KubectlCommandTest, UnreadableKubeconfigExits1NamingTheFile) {
  Result r = RunPlugin({"status", "--kubeconfig=/nonexistent/kubeconfig"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/kubeconfig"));
}

TEST(KubectlCommandTest, NoKubeconfigAndNotInAPodExits1) {
  // No $KUBECONFIG, no $HOME and no KUBERNETES_SERVICE_HOST.
  Result r = RunPlugin({"status"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.err, HasSubstr("kubectl-gpulet: "));
}

}  // namespace
}  // namespace gpulet::cli
