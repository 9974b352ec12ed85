#include "src/cli/labels_command.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "src/base/common/clock.h"
#include "src/base/common/status_macros.h"
#include "src/base/config/resolve.h"
#include "src/cli/app.h"
#include "src/gpu/device/discovery.h"
#include "src/model/labels/node_patch.h"
#include "src/plugin/daemon/label_publisher.h"

namespace gpulet::cli {
namespace {

// One round: discover, compute, write or print (unless the NodeFeature
// object takes the file's place), write the object, patch.
absl::Status LabelOnce(const GlobalOptions& global,
                       const config::Config& config,
                       daemon::LabelPublisher& publisher, bool to_stdout,
                       std::ostream& out) {
  GPULET_ASSIGN_OR_RETURN(NvmlSession nvml, OpenNvml(global));
  device::Node node;  // stays empty on a node without GPUs
  if (nvml.lib != nullptr) {
    GPULET_ASSIGN_OR_RETURN(
        node, device::Discover(*nvml.lib,
                               device::DiscoveryOptions{global.sysfs_root}));
    GPULET_RETURN_IF_ERROR(nvml.lib->Shutdown());
  }
  labels::Labels labels = publisher.Compute(node, config);
  if (publisher.writes_node_feature()) {
    // GFD's NodeFeature mode writes no file.
  } else if (to_stdout) {
    out << labels::FeatureFileText(labels);
    out.flush();
  } else {
    GPULET_RETURN_IF_ERROR(publisher.WriteFeatureFile(labels));
  }
  return publisher.WriteApi(labels);
}

int Fail(std::ostream& err, int code, absl::string_view message) {
  err << "gpulet: " << message << "\n";
  return code;
}

}  // namespace

CLI::App* AddLabelsCommand(CLI::App& app, LabelsOptions& options) {
  options.output_file = daemon::kFeatureFile;
  options.machine_type_file = daemon::kMachineTypeFile;
  CLI::App* cmd = app.add_subcommand(
      "labels",
      "Compute gpu-feature-discovery's node labels; write them to "
      "node-feature-discovery's NodeFeature object or feature file and/or "
      "patch them onto the Node");
  cmd->fallthrough();
  options.env.Add(
      cmd->add_option("-o,--output-file,--output", options.output_file,
                      "Feature file to write atomically (\"-\" or \"\": "
                      "standard output)")
          ->capture_default_str(),
      "GFD_OUTPUT_FILE");
  // GFD's two variables, the first winning.
  options.use_node_feature_api_option = options.env.Add(
      options.env.Add(
          cmd->add_flag("--use-node-feature-api", options.use_node_feature_api,
                        "Write the labels to a NodeFeature object instead of "
                        "the feature file (true or false) [env: "
                        "GFD_USE_NODE_FEATURE_API, USE_NODE_FEATURE_API] "
                        "[default: true when the API server serves "
                        "nodefeatures and a node name is given]"),
          "GFD_USE_NODE_FEATURE_API"),
      "USE_NODE_FEATURE_API");
  options.env.Add(cmd->add_option("--node-name", options.node_name,
                                  "This node's name, for the NodeFeature "
                                  "object"),
                  "NODE_NAME");
  options.env.Add(cmd->add_option("--namespace", options.ns,
                                  "Namespace of the NodeFeature object")
                      ->capture_default_str(),
                  "NAMESPACE");
  cmd->add_option("--patch-node", options.patch_node,
                  "Also merge-patch the labels onto this Node through the API "
                  "server (its own node: see docs/labels.md)")
      ->envname("GPULET_LABELS_PATCH_NODE");
  // Not ->envname("KUBECONFIG"): $KUBECONFIG may list several files, which
  // the API client merges; --kubeconfig is exactly one.
  cmd->add_option("--kubeconfig", options.kubeconfig,
                  "kubeconfig file for the NodeFeature object and "
                  "--patch-node (default: the files of "
                  "$KUBECONFIG merged, else the pod's service account)");
  options.env.Add(
      cmd->add_option("--machine-type-file", options.machine_type_file,
                      "File holding the machine's product name")
          ->capture_default_str(),
      "GFD_MACHINE_TYPE_FILE");
  options.sleep_interval_option = options.env.Add(
      cmd->add_option("--sleep-interval", options.sleep_interval,
                      "Time between labelling rounds (e.g. 60s, 1m30s)")
          ->capture_default_str(),
      "GFD_SLEEP_INTERVAL");
  options.env.Add(
      cmd->add_flag("--oneshot", options.oneshot, "Label once and exit"),
      "GFD_ONESHOT");
  options.env.Add(cmd->add_flag("--no-timestamp", options.no_timestamp,
                                "Leave out nvidia.com/gfd.timestamp"),
                  "GFD_NO_TIMESTAMP");
  // Checked here too (the config resolves it again), so that a bad
  // GFD_MIG_STRATEGY is reported as the variable's.
  options.mig_strategy_option = options.env.Add(
      cmd->add_option("--mig-strategy", options.mig_strategy,
                      "MIG strategy: none, single or mixed [env: "
                      "GFD_MIG_STRATEGY, MIG_STRATEGY] [default: the config "
                      "file's, else none]")
          ->check(CLI::IsMember({"none", "single", "mixed"})),
      "GFD_MIG_STRATEGY");
  options.config_file_option =
      cmd->add_option("--config-file", options.config_file,
                      "NVIDIA's `version: v1` config file (MIG strategy, "
                      "sharing) [env: CONFIG_FILE]");
  return cmd;
}

int RunLabels(const GlobalOptions& global, LabelsOptions& options,
              std::ostream& out, std::ostream& err) {
  if (absl::Status s = options.env.Apply(config::ProcessEnvironment());
      !s.ok()) {
    return Fail(err, kExitUsage, s.message());
  }
  absl::Duration interval;
  if (!absl::ParseDuration(options.sleep_interval, &interval) ||
      interval <= absl::ZeroDuration()) {
    return Fail(err, kExitUsage,
                absl::StrCat(options.env.Source(options.sleep_interval_option),
                             ": \"", options.sleep_interval,
                             "\" is not a positive duration (e.g. 60s, "
                             "1m30s)"));
  }
  config::FlagValues given;
  if (options.mig_strategy_option->count() > 0) {
    given["mig-strategy"] = {options.mig_strategy};
  }
  if (options.config_file_option->count() > 0) {
    given["config-file"] = {options.config_file};
  }
  absl::StatusOr<config::Config> config =
      config::LoadAndResolve(given, config::ProcessEnvironment());
  if (!config.ok()) return Fail(err, kExitUsage, config.status().message());

  daemon::NodeFeatureApi node_feature = daemon::NodeFeatureApi::kAuto;
  if (options.use_node_feature_api_option->count() > 0) {
    node_feature = options.use_node_feature_api ? daemon::NodeFeatureApi::kOn
                                                : daemon::NodeFeatureApi::kOff;
  }
  const bool to_stdout =
      options.output_file.empty() || options.output_file == "-";
  daemon::LabelOptions label_options;
  label_options.output_file = to_stdout ? "" : options.output_file;
  label_options.node_name = options.patch_node;
  label_options.node_feature_api = node_feature;
  label_options.feature_node = options.node_name;
  label_options.feature_namespace = options.ns;
  label_options.kubeconfig = options.kubeconfig;
  label_options.machine_type_file = options.machine_type_file;
  label_options.sysfs_root = global.sysfs_root;
  label_options.timestamp = !options.no_timestamp;
  label_options.background_patch = false;
  absl::StatusOr<std::unique_ptr<daemon::LabelPublisher>> publisher =
      daemon::LabelPublisher::Create(label_options);
  if (!publisher.ok()) {
    return Fail(err,
                publisher.status().code() == absl::StatusCode::kInvalidArgument
                    ? kExitUsage
                    : kExitRuntimeError,
                publisher.status().message());
  }
  while (true) {
    absl::Status s = LabelOnce(global, *config, **publisher, to_stdout, out);
    if (!s.ok()) return Fail(err, kExitRuntimeError, s.message());
    if (options.oneshot) return kExitOk;
    common::RealClock::Get().Sleep(interval);
  }
}

}  // namespace gpulet::cli
