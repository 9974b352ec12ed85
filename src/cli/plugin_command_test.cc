#include "src/cli/plugin_command.h"

#include <stdlib.h>

#include <map>
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

config::EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

class PluginCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"KUBELET_SOCKET", "FAIL_ON_INIT_ERROR", "DP_DISABLE_HEALTHCHECKS",
          "DP_ENABLE_HEALTHCHECKS", "GPULET_HEALTH_QUIET_PERIOD", "CONFIG_FILE",
          "MIG_STRATEGY", "NVIDIA_DRIVER_ROOT", "GPULET_LABELS_OUTPUT_FILE",
          "GPULET_LABELS_PATCH_NODE", "KUBECONFIG",
          "GPULET_LABELS_USE_NODE_FEATURE_API", "GPULET_LABELS_NAMESPACE",
          "NODE_NAME"}) {
      unsetenv(name);
    }
  }
  void TearDown() override { SetUp(); }
};

TEST_F(PluginCommandTest, DefaultsMatchNvidia) {
  auto d = MakeDaemonOptions(GlobalOptions{}, config::Config{}, Env({}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->kubelet_socket, "/var/lib/kubelet/device-plugins/kubelet.sock");
  EXPECT_TRUE(d->fail_on_init_error);
  EXPECT_EQ(d->nvml.driver_root, "/");
  EXPECT_EQ(d->nvml.library_path, "");
  EXPECT_EQ(d->socket_prefix, "gpulet");
  EXPECT_EQ(d->health, health::MonitorOptions{});
}

TEST_F(PluginCommandTest, MemorySharesReadTheNodeAndApiFromTheEnvironment) {
  auto d = MakeDaemonOptions(GlobalOptions{}, config::Config{}, Env({}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->node_name, "");
  EXPECT_EQ(d->kubeconfig, "");
  EXPECT_EQ(d->pod_resources_socket,
            "/var/lib/kubelet/pod-resources/kubelet.sock");
  d = MakeDaemonOptions(GlobalOptions{}, config::Config{},
                        Env({{"NODE_NAME", "n1"},
                             {"KUBECONFIG", "/etc/k.yaml"},
                             {"GPULET_POD_RESOURCES_SOCKET", "/run/pr.sock"}}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->node_name, "n1");
  // $KUBECONFIG (maybe several files) is the API client's to read and merge.
  EXPECT_EQ(d->kubeconfig, "");
  EXPECT_EQ(d->pod_resources_socket, "/run/pr.sock");
}

TEST_F(PluginCommandTest, CopiesConfigAndGlobalOptions) {
  GlobalOptions global;
  global.nvml_lib = "/x/libnvidia-ml.so.1";
  global.sysfs_root = "/fake/sys";
  config::Config config;
  config.flags.nvidia_driver_root = "/run/nvidia/driver";
  config.flags.plugin.kubelet_socket = "/tmp/k/kubelet.sock";
  config.flags.fail_on_init_error = false;
  config.flags.mig_strategy = config::MigStrategy::kMixed;
  auto d = MakeDaemonOptions(global, config,
                             Env({{"DP_DISABLE_HEALTHCHECKS", "xids"}}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->nvml.driver_root, "/run/nvidia/driver");
  EXPECT_EQ(d->nvml.library_path, "/x/libnvidia-ml.so.1");
  EXPECT_EQ(d->sysfs_root, "/fake/sys");
  EXPECT_EQ(d->kubelet_socket, "/tmp/k/kubelet.sock");
  EXPECT_FALSE(d->fail_on_init_error);
  EXPECT_EQ(d->config.flags.mig_strategy, config::MigStrategy::kMixed);
  EXPECT_TRUE(d->health.xids_disabled);
}

TEST_F(PluginCommandTest, HealthQuietPeriod) {
  auto d = MakeDaemonOptions(GlobalOptions{}, config::Config{},
                             Env({{"GPULET_HEALTH_QUIET_PERIOD", "2s"}}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->health.quiet_period, absl::Seconds(2));
  d = MakeDaemonOptions(GlobalOptions{}, config::Config{},
                        Env({{"GPULET_HEALTH_QUIET_PERIOD", "soon"}}));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("GPULET_HEALTH_QUIET_PERIOD"));
}

TEST_F(PluginCommandTest, UnusableValuesNameTheFlagOrVariable) {
  struct Case {
    std::string socket;
    std::string disable;
    const char* want;
  } cases[] = {
      {"", "", "--kubelet-socket"},
      {"/var/lib/kubelet/device-plugins/", "", "--kubelet-socket"},
      {"/" + std::string(120, 'x'), "", "--kubelet-socket"},
      {"/tmp/kubelet.sock", "4x", "DP_DISABLE_HEALTHCHECKS"},
  };
  for (const Case& c : cases) {
    config::Config config;
    config.flags.plugin.kubelet_socket = c.socket;
    std::map<std::string, std::string> vars;
    if (!c.disable.empty()) vars["DP_DISABLE_HEALTHCHECKS"] = c.disable;
    auto d = MakeDaemonOptions(GlobalOptions{}, config, Env(vars));
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
  EXPECT_EQ(RunArgs({"plugin", "--mig-strategy=half"}, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("flags.migStrategy"));
  EXPECT_EQ(RunArgs({"plugin", "--device-list-strategy=envvar,floppy"}, &err),
            kExitUsage);
  EXPECT_THAT(err, HasSubstr("floppy"));
  EXPECT_EQ(RunArgs({"plugin", "--config-file=/nonexistent/gpulet.yaml"}, &err),
            kExitUsage);
  EXPECT_THAT(err, HasSubstr("/nonexistent/gpulet.yaml"));
  setenv("FAIL_ON_INIT_ERROR", "sometimes", 1);
  EXPECT_EQ(RunArgs({"plugin"}, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("FAIL_ON_INIT_ERROR"));
  unsetenv("FAIL_ON_INIT_ERROR");
  setenv("DP_ENABLE_HEALTHCHECKS", "79,x", 1);
  EXPECT_EQ(RunArgs({"plugin"}, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("DP_ENABLE_HEALTHCHECKS"));
}

TEST_F(PluginCommandTest, GivenFlagsRecordsOnlyWhatTheCommandLineSaid) {
  CLI::App app;
  GlobalOptions global;
  AddGlobalOptions(app, global);
  PluginCommandOptions options;
  AddPluginCommand(app, options);
  const char* args[] = {"gpulet",
                        "plugin",
                        "--pass-device-specs",
                        "--device-list-strategy=envvar,cdi-cri",
                        "--device-list-strategy",
                        "volume-mounts",
                        "--nvidia-driver-root=/run/nvidia/driver",
                        "--fail-on-init-error=false"};
  app.parse(static_cast<int>(std::size(args)), args);
  config::FlagValues given = GivenFlags(options, global, Env({}));
  EXPECT_EQ(given, (config::FlagValues{{"pass-device-specs", {""}},
                                       {"device-list-strategy",
                                        {"envvar,cdi-cri", "volume-mounts"}},
                                       {"driver-root", {"/run/nvidia/driver"}},
                                       {"fail-on-init-error", {"false"}}}));
}

TEST_F(PluginCommandTest, DriverRootFromTheEnvironmentIsNotAFlag) {
  setenv("NVIDIA_DRIVER_ROOT", "/from/env", 1);
  CLI::App app;
  GlobalOptions global;
  AddGlobalOptions(app, global);
  PluginCommandOptions options;
  AddPluginCommand(app, options);
  const char* args[] = {"gpulet", "plugin"};
  app.parse(2, args);
  EXPECT_TRUE(
      GivenFlags(options, global, Env({{"NVIDIA_DRIVER_ROOT", "/from/env"}}))
          .empty());
}

TEST_F(PluginCommandTest, NodeLabelOptionsReachTheDaemon) {
  CLI::App app;
  GlobalOptions global;
  AddGlobalOptions(app, global);
  PluginCommandOptions options;
  AddPluginCommand(app, options);
  const char* args[] = {"gpulet",
                        "plugin",
                        "--labels-output-file=/nfd/gfd",
                        "--labels-patch-node=node-1",
                        "--kubeconfig=/k/config",
                        "--sysfs-root=/fake/sys"};
  app.parse(static_cast<int>(std::size(args)), args);
  auto d = MakeDaemonOptions(global, options, config::Config{}, Env({}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->labels.output_file, "/nfd/gfd");
  EXPECT_EQ(d->labels.node_name, "node-1");
  EXPECT_EQ(d->labels.kubeconfig, "/k/config");
  EXPECT_EQ(d->labels.sysfs_root, "/fake/sys");
  EXPECT_TRUE(d->labels.enabled());
  // Off unless asked for.
  auto off = MakeDaemonOptions(GlobalOptions{}, PluginCommandOptions{},
                               config::Config{}, Env({}));
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->labels.enabled());
  EXPECT_EQ(off->labels.node_feature_api, daemon::NodeFeatureApi::kAuto);
}

TEST_F(PluginCommandTest, NodeFeatureOptionsReachTheDaemon) {
  CLI::App app;
  GlobalOptions global;
  AddGlobalOptions(app, global);
  PluginCommandOptions options;
  AddPluginCommand(app, options);
  const char* args[] = {"gpulet", "plugin", "--labels-use-node-feature-api",
                        "--labels-namespace=gpu"};
  app.parse(static_cast<int>(std::size(args)), args);
  auto d = MakeDaemonOptions(global, options, config::Config{},
                             Env({{"NODE_NAME", "node-1"}}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->labels.node_feature_api, daemon::NodeFeatureApi::kOn);
  EXPECT_EQ(d->labels.feature_node, "node-1");
  EXPECT_EQ(d->labels.feature_namespace, "gpu");
  EXPECT_TRUE(d->labels.enabled());

  CLI::App app2;
  AddGlobalOptions(app2, global);
  PluginCommandOptions off;
  AddPluginCommand(app2, off);
  const char* off_args[] = {"gpulet", "plugin",
                            "--labels-use-node-feature-api=false"};
  app2.parse(static_cast<int>(std::size(off_args)), off_args);
  d = MakeDaemonOptions(global, off, config::Config{}, Env({}));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->labels.node_feature_api, daemon::NodeFeatureApi::kOff);
  EXPECT_EQ(d->labels.feature_namespace, "default");
  EXPECT_FALSE(d->labels.enabled());
}

TEST_F(PluginCommandTest, HelpListsNvidiaFlagsAndEnv) {
  std::ostringstream out;
  std::ostringstream err;
  const char* args[] = {"gpulet", "plugin", "--help"};
  EXPECT_EQ(cli::Run(3, args, out, err), kExitOk);
  for (const char* want :
       {"--kubelet-socket", "KUBELET_SOCKET", "--fail-on-init-error",
        "FAIL_ON_INIT_ERROR", "--mig-strategy", "MIG_STRATEGY",
        "--device-list-strategy", "--config-file", "CONFIG_FILE",
        "--nvidia-dev-root", "--shared-devices-allocation-policy"}) {
    EXPECT_THAT(out.str(), HasSubstr(want));
  }
}

}  // namespace
}  // namespace gpulet::cli
