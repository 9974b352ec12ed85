#include "src/cli/plugin_command.h"

#include <sys/un.h>

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/cli/app.h"
#include "src/health/xid_policy.h"

namespace gpulet::cli {
namespace {

absl::Status CheckKubeletSocket(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("--kubelet-socket must not be empty");
  }
  if (path.back() == '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kubelet-socket ", path, " names a directory, not a socket"));
  }
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kubelet-socket ", path, " is ", path.size(),
                     " bytes; unix socket paths allow at most ",
                     sizeof(sockaddr_un::sun_path) - 1));
  }
  return absl::OkStatus();
}

}  // namespace

CLI::App* AddPluginCommand(CLI::App& app, PluginCommandOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "plugin", "Run the kubelet device plugin (advertises nvidia.com/gpu)");
  // Global options after the subcommand, as in NVIDIA's plugin flags.
  cmd->fallthrough();
  cmd->add_option("--kubelet-socket", options.kubelet_socket,
                  "The kubelet's device plugin registration socket; plugin "
                  "sockets are created in its directory")
      ->envname("KUBELET_SOCKET")
      ->capture_default_str();
  cmd->add_flag("--fail-on-init-error", options.fail_on_init_error,
                "Exit with an error when NVML cannot be loaded or "
                "initialised or there is no GPU; with "
                "--fail-on-init-error=false, log it and wait")
      ->envname("FAIL_ON_INIT_ERROR")
      ->capture_default_str();
  return cmd;
}

absl::StatusOr<daemon::DaemonOptions> MakeDaemonOptions(
    const GlobalOptions& global, const PluginCommandOptions& options,
    const char* disable_healthchecks, const char* enable_healthchecks,
    const char* health_quiet_period) {
  if (absl::Status s = CheckKubeletSocket(options.kubelet_socket); !s.ok()) {
    return s;
  }
  absl::StatusOr<health::MonitorOptions> health =
      health::ParseHealthEnv(disable_healthchecks, enable_healthchecks);
  if (!health.ok()) return health.status();
  absl::StatusOr<absl::Duration> quiet_period =
      health::ParseQuietPeriod(health_quiet_period);
  if (!quiet_period.ok()) return quiet_period.status();
  health->quiet_period = *quiet_period;
  daemon::DaemonOptions d;
  d.nvml.driver_root = global.driver_root;
  d.nvml.library_path = global.nvml_lib;
  d.sysfs_root = global.sysfs_root;
  d.kubelet_socket = options.kubelet_socket;
  d.fail_on_init_error = options.fail_on_init_error;
  d.health = *std::move(health);
  return d;
}

int RunPlugin(const GlobalOptions& global, const PluginCommandOptions& options,
              std::ostream& err) {
  absl::StatusOr<daemon::DaemonOptions> daemon_options =
      MakeDaemonOptions(global, options, std::getenv("DP_DISABLE_HEALTHCHECKS"),
                        std::getenv("DP_ENABLE_HEALTHCHECKS"),
                        std::getenv("GPULET_HEALTH_QUIET_PERIOD"));
  if (!daemon_options.ok()) {
    err << "gpulet: " << daemon_options.status().message() << "\n";
    return kExitUsage;
  }
  daemon::Daemon daemon(*std::move(daemon_options));
  return daemon.Run();
}

}  // namespace gpulet::cli
