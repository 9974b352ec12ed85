#include "src/cli/plugin_command.h"

#include <stdlib.h>

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/cli/app.h"

namespace gpulet::cli {
namespace {

using ::testing::HasSubstr;

int RunArgs(std::vector<const char*> args, std::string* err_text) {
  args.insert(args.begin(), "gpulet");
  std::ostringstream out;
  std::ostringstream err;
  int code = cli::Run(static_cast<int>(args.size()), args.data(), out, err);
  *err_text = err.str();
  return code;
}

class PluginCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"KUBELET_SOCKET", "FAIL_ON_INIT_ERROR", "DP_DISABLE_HEALTHCHECKS",
          "DP_ENABLE_HEALTHCHECKS", "GPULET_HEALTH_QUIET_PERIOD"}) {
      unsetenv(name);
    }
  }
  void TearDown() override { SetUp(); }
};

TEST_F(PluginCommandTest, DefaultsMatchNvidia) {
  GlobalOptions global;
  PluginCommandOptions options;
  auto d = MakeDaemonOptions(global, options, nullptr, nullptr);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->kubelet_socket, "/var/lib/kubelet/device-plugins/kubelet.sock");
  EXPECT_TRUE(d->fail_on_init_error);
  EXPECT_EQ(d->nvml.driver_root, "/");
  EXPECT_EQ(d->nvml.library_path, "");
  EXPECT_EQ(d->socket_prefix, "gpulet");
  EXPECT_EQ(d->health, health::MonitorOptions{});
}

TEST_F(PluginCommandTest, CopiesGlobalAndPluginOptions) {
  GlobalOptions global;
  global.driver_root = "/run/nvidia/driver";
  global.nvml_lib = "/x/libnvidia-ml.so.1";
  global.sysfs_root = "/fake/sys";
  PluginCommandOptions options;
  options.kubelet_socket = "/tmp/k/kubelet.sock";
  options.fail_on_init_error = false;
  auto d = MakeDaemonOptions(global, options, "xids", nullptr);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->nvml.driver_root, "/run/nvidia/driver");
  EXPECT_EQ(d->nvml.library_path, "/x/libnvidia-ml.so.1");
  EXPECT_EQ(d->sysfs_root, "/fake/sys");
  EXPECT_EQ(d->kubelet_socket, "/tmp/k/kubelet.sock");
  EXPECT_FALSE(d->fail_on_init_error);
  EXPECT_TRUE(d->health.xids_disabled);
}

TEST_F(PluginCommandTest, HealthQuietPeriod) {
  auto d = MakeDaemonOptions(GlobalOptions{}, PluginCommandOptions{}, nullptr,
                             nullptr, "2s");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->health.quiet_period, absl::Seconds(2));
  d = MakeDaemonOptions(GlobalOptions{}, PluginCommandOptions{}, nullptr,
                        nullptr, "soon");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("GPULET_HEALTH_QUIET_PERIOD"));
}

TEST_F(PluginCommandTest, UnusableValuesNameTheFlagOrVariable) {
  struct Case {
    std::string socket;
    const char* disable;
    const char* want;
  } cases[] = {
      {"", nullptr, "--kubelet-socket"},
      {"/var/lib/kubelet/device-plugins/", nullptr, "--kubelet-socket"},
      {"/" + std::string(120, 'x'), nullptr, "--kubelet-socket"},
      {"/tmp/kubelet.sock", "4x", "DP_DISABLE_HEALTHCHECKS"},
  };
  for (const Case& c : cases) {
    PluginCommandOptions options;
    options.kubelet_socket = c.socket;
    auto d = MakeDaemonOptions(GlobalOptions{}, options, c.disable, nullptr);
    ASSERT_FALSE(d.ok()) << c.socket;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(c.want));
  }
}

// Parse errors are reported before the daemon starts (no NVML, no signals).
TEST_F(PluginCommandTest, BadFlagValuesExitTwo) {
  std::string err;
  EXPECT_EQ(RunArgs({"plugin", "--fail-on-init-error=maybe"}, &err),
            kExitUsage);
  EXPECT_THAT(err, HasSubstr("--fail-on-init-error"));
  EXPECT_EQ(RunArgs({"plugin", "--kubelet-socket", ""}, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("--kubelet-socket"));
  setenv("FAIL_ON_INIT_ERROR", "sometimes", 1);
  EXPECT_EQ(RunArgs({"plugin"}, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("--fail-on-init-error"));
  unsetenv("FAIL_ON_INIT_ERROR");
  setenv("DP_ENABLE_HEALTHCHECKS", "79,x", 1);
  EXPECT_EQ(RunArgs({"plugin"}, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("DP_ENABLE_HEALTHCHECKS"));
}

TEST_F(PluginCommandTest, HelpListsNvidiaFlagsAndEnv) {
  std::ostringstream out;
  std::ostringstream err;
  const char* args[] = {"gpulet", "plugin", "--help"};
  EXPECT_EQ(cli::Run(3, args, out, err), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("--kubelet-socket"));
  EXPECT_THAT(out.str(), HasSubstr("KUBELET_SOCKET"));
  EXPECT_THAT(out.str(), HasSubstr("--fail-on-init-error"));
  EXPECT_THAT(out.str(), HasSubstr("FAIL_ON_INIT_ERROR"));
}

}  // namespace
}  // namespace gpulet::cli
