// `gpulet plugin`: the kubelet device plugin daemon (src/daemon), with
// NVIDIA k8s-device-plugin's flag names and environment variables:
//   --kubelet-socket      KUBELET_SOCKET      (default
//                         /var/lib/kubelet/device-plugins/kubelet.sock)
//   --fail-on-init-error  FAIL_ON_INIT_ERROR  (true|false, default true)
//   DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS (health::ParseHealthEnv)
//   GPULET_HEALTH_QUIET_PERIOD (health::ParseQuietPeriod)
// plus the global --driver-root, --nvml-lib, --sysfs-root, -v, --log-format,
// which may also follow the subcommand.
//
// Thread safety: run on the main thread, before any other thread exists
// (the daemon blocks signals first thing).
#pragma once

#include <ostream>
#include <string>

#include "CLI/App.hpp"
#include "absl/status/statusor.h"
#include "src/cli/global_options.h"
#include "src/daemon/daemon.h"

namespace gpulet::cli {

struct PluginCommandOptions {
  std::string kubelet_socket = "/var/lib/kubelet/device-plugins/kubelet.sock";
  bool fail_on_init_error = true;
};

CLI::App* AddPluginCommand(CLI::App& app, PluginCommandOptions& options);

// The daemon's options from the parsed flags and the health variables'
// values (nullptr when unset), GPULET_HEALTH_QUIET_PERIOD included.
// InvalidArgument naming the flag or variable when a value is unusable.
absl::StatusOr<daemon::DaemonOptions> MakeDaemonOptions(
    const GlobalOptions& global, const PluginCommandOptions& options,
    const char* disable_healthchecks, const char* enable_healthchecks,
    const char* health_quiet_period = nullptr);

// Runs the daemon until SIGTERM/SIGINT and returns the process exit code:
// 0 clean stop, 1 start-up failure (failOnInitError), 2 unusable option
// (the message, naming the flag or variable, on `err`).
int RunPlugin(const GlobalOptions& global, const PluginCommandOptions& options,
              std::ostream& err);

}  // namespace gpulet::cli
