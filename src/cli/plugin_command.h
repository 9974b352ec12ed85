// `gpulet plugin`: the kubelet device plugin daemon (src/plugin/daemon),
// configured as NVIDIA k8s-device-plugin is: every flag of config::FlagTable()
// (same names, aliases and environment variables), a `version: v1` file named
// by
// --config-file / CONFIG_FILE, with flag > environment > file > default
// precedence (config::Resolve). Besides those:
//   DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS (health::ParseHealthEnv)
//   GPULET_HEALTH_QUIET_PERIOD (health::ParseQuietPeriod)
// gpulet's own --cdi-spec-dir and the node label options below,
// and the global --driver-root (alias --nvidia-driver-root), --nvml-lib,
// --sysfs-root, -v, --log-format, which may also follow the subcommand.
//
// Thread safety: run on the main thread, before any other thread exists
// (the daemon blocks signals first thing).
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/App.hpp"
#include "absl/status/statusor.h"
#include "src/base/config/config.h"
#include "src/base/config/resolve.h"
#include "src/cli/global_options.h"
#include "src/plugin/daemon/daemon.h"

namespace gpulet::cli {

struct PluginCommandOptions {
  // The subcommand's options, one per FlagTable() entry but driver-root
  // (the global option), by canonical flag name. Filled by AddPluginCommand.
  std::vector<std::pair<std::string, CLI::Option*>> flags;
  CLI::Option* driver_root = nullptr;  // the global --driver-root
  // --cdi-spec-dir (GPULET_CDI_SPEC_DIR): where the CDI spec is written when
  // a CDI strategy is configured.
  std::string cdi_spec_dir = "/var/run/cdi";
  // Node labels (docs/labels.md), off unless one of the first two is set
  // or the third is true:
  // --labels-output-file (GPULET_LABELS_OUTPUT_FILE), the feature file;
  // --labels-patch-node (GPULET_LABELS_PATCH_NODE), the Node to patch;
  // --labels-use-node-feature-api (GPULET_LABELS_USE_NODE_FEATURE_API):
  // true, false or not given (auto: when the API server serves
  // nodefeatures, the NodeFeature object of NODE_NAME in --labels-namespace
  // (GPULET_LABELS_NAMESPACE) instead of the other two);
  // --kubeconfig, how to reach the API server (default: the files of
  // $KUBECONFIG merged, else the pod's service account).
  std::string labels_output_file;
  std::string labels_patch_node;
  bool labels_use_node_feature_api = false;
  CLI::Option* labels_use_node_feature_api_option = nullptr;
  std::string labels_namespace = "default";
  std::string kubeconfig;
  // Per-node configuration (docs/configuration.md), NVIDIA config-manager's
  // options: --config-dir (CONFIG_FILE_SRCDIR), --config-label
  // (NODE_LABEL), --default-config (DEFAULT_CONFIG), --fallback-strategies
  // (FALLBACK_STRATEGIES).
  daemon::NodeConfigOptions node_config;
};

CLI::App* AddPluginCommand(CLI::App& app, PluginCommandOptions& options);

// The flags the command line gave, for config::Resolve. The global
// --driver-root counts only when it did not come from NVIDIA_DRIVER_ROOT
// (CLI11 reads that variable for the other subcommands).
config::FlagValues GivenFlags(const PluginCommandOptions& options,
                              const GlobalOptions& global,
                              const config::EnvLookup& env);

// The daemon's options from a resolved configuration, the global options and
// the health variables read through `env`. InvalidArgument naming the flag
// or variable when a value is unusable.
absl::StatusOr<daemon::DaemonOptions> MakeDaemonOptions(
    const GlobalOptions& global, const config::Config& config,
    const config::EnvLookup& env);
absl::StatusOr<daemon::DaemonOptions> MakeDaemonOptions(
    const GlobalOptions& global, const PluginCommandOptions& options,
    const config::Config& config, const config::EnvLookup& env);

// Runs the daemon until SIGTERM/SIGINT and returns the process exit code:
// 0 clean stop, 1 start-up failure, 2 unusable flag, variable or config
// file (the message, naming the key or flag, on `err`).
int RunPlugin(const GlobalOptions& global, const PluginCommandOptions& options,
              std::ostream& err);

}  // namespace gpulet::cli
