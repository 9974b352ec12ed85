#include "src/cli/plugin_command.h"

#include <sys/un.h>

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/common/logging.h"
#include "src/base/config/flag_table.h"
#include "src/cli/app.h"
#include "src/gpu/health/health_config.h"
#include "src/model/resources/resource_handlers.h"

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

std::string HelpFor(const config::FlagSpec& spec) {
  std::string help = spec.help;
  if (!spec.env_vars.empty()) {
    absl::StrAppend(&help, " [env: ", absl::StrJoin(spec.env_vars, ", "), "]");
  }
  if (!spec.default_value.empty()) {
    absl::StrAppend(&help, " [default: ", spec.default_value, "]");
  }
  return help;
}

void AddNodeConfigOptions(CLI::App& cmd, daemon::NodeConfigOptions& o) {
  cmd.add_option("--config-dir", o.dir,
                 "Directory of named config files (a ConfigMap's keys): the "
                 "one the Node's --config-label names is used, and followed "
                 "when the label changes; instead of --config-file")
      ->envname("CONFIG_FILE_SRCDIR");
  cmd.add_option("--config-label", o.label,
                 "The Node label that names the config file in --config-dir")
      ->envname("NODE_LABEL")
      ->capture_default_str();
  cmd.add_option("--default-config", o.default_name,
                 "The config in --config-dir for a Node without the label")
      ->envname("DEFAULT_CONFIG");
  cmd.add_option("--fallback-strategies", o.fallbacks,
                 "Without the label and --default-config, in order: named "
                 "(the config named default), single (the only config), "
                 "empty (no config file)")
      ->envname("FALLBACK_STRATEGIES")
      ->delimiter(',')
      ->default_str(absl::StrJoin(o.fallbacks, ","));
}

}  // namespace

CLI::App* AddPluginCommand(CLI::App& app, PluginCommandOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "plugin",
      "Run the kubelet device plugin, configured by NVIDIA k8s-device-plugin's "
      "flags, environment variables and config file");
  // Global options after the subcommand, as in NVIDIA's plugin flags.
  cmd->fallthrough();
  options.driver_root = app.get_option("--driver-root");
  for (const config::FlagSpec& spec : config::FlagTable()) {
    if (spec.name == "driver-root") continue;
    std::string names = absl::StrCat("--", spec.name);
    for (const std::string& alias : spec.aliases) {
      absl::StrAppend(&names, ",--", alias);
    }
    CLI::Option* opt = cmd->add_option(names);
    opt->description(HelpFor(spec));
    if (spec.kind == config::FlagKind::kBool) {
      opt->expected(0, 1);
    } else {
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    }
    options.flags.emplace_back(spec.name, opt);
  }
  cmd->add_option("--cdi-spec-dir", options.cdi_spec_dir,
                  "Where the CDI spec is written when a cdi-annotations or "
                  "cdi-cri strategy is configured")
      ->envname("GPULET_CDI_SPEC_DIR")
      ->capture_default_str();
  cmd->add_option("--labels-output-file", options.labels_output_file,
                  "Write gpu-feature-discovery's node labels to this "
                  "node-feature-discovery feature file (e.g. " +
                      std::string(daemon::kFeatureFile) + ")")
      ->envname("GPULET_LABELS_OUTPUT_FILE");
  cmd->add_option("--labels-patch-node", options.labels_patch_node,
                  "Merge-patch the node labels onto this Node (the node "
                  "gpulet runs on) through the API server")
      ->envname("GPULET_LABELS_PATCH_NODE");
  options.labels_use_node_feature_api_option =
      cmd->add_flag("--labels-use-node-feature-api",
                    options.labels_use_node_feature_api,
                    "Write the node labels to the NodeFeature object of "
                    "this node (named by NODE_NAME) instead of the feature "
                    "file and the Node patch (true or false; true also "
                    "turns labels on) [default: true when the API server "
                    "serves nodefeatures]")
          ->envname("GPULET_LABELS_USE_NODE_FEATURE_API");
  cmd->add_option("--labels-namespace", options.labels_namespace,
                  "Namespace of the NodeFeature object")
      ->envname("GPULET_LABELS_NAMESPACE")
      ->capture_default_str();
  // Not ->envname("KUBECONFIG"): $KUBECONFIG may list several files, which
  // the API client merges; --kubeconfig is exactly one.
  cmd->add_option("--kubeconfig", options.kubeconfig,
                  "kubeconfig file for the API server, for "
                  "the node labels and memory shares (default: the files "
                  "of $KUBECONFIG merged, else the pod's service account)");
  AddNodeConfigOptions(*cmd, options.node_config);
  return cmd;
}

config::FlagValues GivenFlags(const PluginCommandOptions& options,
                              const GlobalOptions& global,
                              const config::EnvLookup& env) {
  config::FlagValues given;
  for (const auto& [name, opt] : options.flags) {
    if (opt->count() == 0) continue;
    std::vector<std::string> values = opt->results();
    if (values.empty()) values.emplace_back();  // bare boolean flag
    given[name] = std::move(values);
  }
  if (options.driver_root != nullptr && options.driver_root->count() > 0) {
    std::optional<std::string> from_env = env("NVIDIA_DRIVER_ROOT");
    if (!from_env.has_value() || *from_env != global.driver_root) {
      given["driver-root"] = {global.driver_root};
    }
  }
  return given;
}

absl::StatusOr<daemon::DaemonOptions> MakeDaemonOptions(
    const GlobalOptions& global, const config::Config& config,
    const config::EnvLookup& env) {
  const std::string& socket = config.flags.plugin.kubelet_socket;
  if (absl::Status s = CheckKubeletSocket(socket); !s.ok()) return s;
  absl::StatusOr<health::MonitorOptions> health =
      health::OptionsFromConfig(config.health, env);
  if (!health.ok()) return health.status();
  daemon::DaemonOptions d;
  d.config = config;
  // Inside NVIDIA's charts the host's driver root is mounted at
  // flags.plugin.containerDriverRoot; NVML is loaded from there when it
  // exists, as NVIDIA's plugin does, else from the driver root itself.
  d.nvml.driver_root = resources::MakeHostView(config).driver_root;
  d.nvml.library_path = global.nvml_lib;
  d.sysfs_root = global.sysfs_root;
  d.kubelet_socket = socket;
  d.fail_on_init_error = config.flags.fail_on_init_error;
  d.health = *std::move(health);
  // Memory shares (docs/sharing.md): the Node's name from the downward API;
  // the API client itself reads $KUBECONFIG (several files, merged) when
  // no --kubeconfig is given.
  if (std::optional<std::string> v = env("NODE_NAME"); v && !v->empty()) {
    d.node_name = *v;
  }
  if (std::optional<std::string> v = env("GPULET_POD_RESOURCES_SOCKET");
      v && !v->empty()) {
    d.pod_resources_socket = *v;
  }
  return d;
}

absl::StatusOr<daemon::DaemonOptions> MakeDaemonOptions(
    const GlobalOptions& global, const PluginCommandOptions& options,
    const config::Config& config, const config::EnvLookup& env) {
  absl::StatusOr<daemon::DaemonOptions> d =
      MakeDaemonOptions(global, config, env);
  if (!d.ok()) return d;
  d->cdi_spec_dir = options.cdi_spec_dir;
  d->labels.output_file = options.labels_output_file;
  d->labels.node_name = options.labels_patch_node;
  if (options.labels_use_node_feature_api_option != nullptr &&
      options.labels_use_node_feature_api_option->count() > 0) {
    d->labels.node_feature_api = options.labels_use_node_feature_api
                                     ? daemon::NodeFeatureApi::kOn
                                     : daemon::NodeFeatureApi::kOff;
  } else {
    d->labels.node_feature_api = daemon::NodeFeatureApi::kAuto;
  }
  d->labels.feature_node = d->node_name;
  d->labels.feature_namespace = options.labels_namespace;
  d->labels.kubeconfig = options.kubeconfig;
  if (!options.kubeconfig.empty()) d->kubeconfig = options.kubeconfig;
  d->labels.sysfs_root = global.sysfs_root;
  d->node_config = options.node_config;
  d->node_config.node_name = d->node_name;
  if (absl::Status s = daemon::ValidateNodeConfigOptions(d->node_config);
      !s.ok()) {
    return s;
  }
  if (d->node_config.enabled() &&
      config::ConfigFilePath(GivenFlags(options, global, env), env)) {
    return absl::InvalidArgumentError(
        "--config-dir and --config-file (CONFIG_FILE): give one; with "
        "--config-dir the Node's label picks the file");
  }
  return d;
}

int RunPlugin(const GlobalOptions& global, const PluginCommandOptions& options,
              std::ostream& err) {
  config::EnvLookup env = config::ProcessEnvironment();
  config::FlagValues given = GivenFlags(options, global, env);
  absl::StatusOr<config::Config> config = config::LoadAndResolve(given, env);
  if (!config.ok()) {
    err << "gpulet: " << config.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<daemon::DaemonOptions> daemon_options =
      MakeDaemonOptions(global, options, *config, env);
  if (!daemon_options.ok()) {
    err << "gpulet: " << daemon_options.status().message() << "\n";
    return kExitUsage;
  }
  for (const std::string& key : config->ignored_keys) {
    GPULET_LOG(WARNING) << "config key " << key
                        << " is accepted for compatibility and ignored";
  }
  daemon_options->reload_config =
      [given, env](const std::optional<std::string>& file) {
        config::FlagValues flags = given;
        if (file.has_value()) flags[config::kConfigFileFlag] = {*file};
        return config::LoadAndResolve(flags, env);
      };
  daemon::Daemon daemon(*std::move(daemon_options));
  return daemon.Run();
}

}  // namespace gpulet::cli
