// `gpulet labels`: gpu-feature-discovery's node labels (docs/labels.md) for
// this node, written to node-feature-discovery's NodeFeature object (when
// the API server serves it and the node's name is known, or when asked) or
// else its local feature file and, with --patch-node, merge-patched onto
// the Node through the API server.
// GFD's flags and environment variables where the concept is the same:
//   -o/--output-file/--output (GFD_OUTPUT_FILE; "" or "-": standard output),
//   --oneshot (GFD_ONESHOT), --sleep-interval (GFD_SLEEP_INTERVAL),
//   --no-timestamp (GFD_NO_TIMESTAMP), --machine-type-file
//   (GFD_MACHINE_TYPE_FILE), --mig-strategy (GFD_MIG_STRATEGY, then
//   MIG_STRATEGY) and --config-file (CONFIG_FILE: NVIDIA's `version: v1`
//   file, for the MIG strategy and sharing), --use-node-feature-api
//   (GFD_USE_NODE_FEATURE_API, then USE_NODE_FEATURE_API; not given: auto),
//   --node-name (NODE_NAME) and --namespace (NAMESPACE, "default");
// and gpulet's own --patch-node (GPULET_LABELS_PATCH_NODE) and --kubeconfig
// (KUBECONFIG; default: the pod's service account).
//
// Thread safety: run on the main thread, one command per process.
#pragma once

#include <ostream>
#include <string>

#include "CLI/App.hpp"
#include "src/cli/env_fallbacks.h"
#include "src/cli/global_options.h"

namespace gpulet::cli {

struct LabelsOptions {
  std::string output_file;
  std::string patch_node;
  bool use_node_feature_api = false;
  std::string node_name;
  std::string ns = "default";
  std::string kubeconfig;
  std::string machine_type_file;
  std::string sleep_interval = "60s";
  bool oneshot = false;
  bool no_timestamp = false;
  std::string mig_strategy;
  std::string config_file;
  CLI::Option* mig_strategy_option = nullptr;
  CLI::Option* config_file_option = nullptr;
  CLI::Option* sleep_interval_option = nullptr;
  CLI::Option* use_node_feature_api_option = nullptr;
  // The GFD_* variables: read after parsing, so that errors name them.
  EnvFallbacks env;
};

CLI::App* AddLabelsCommand(CLI::App& app, LabelsOptions& options);

// Labels once (--oneshot) or every --sleep-interval until killed. Returns
// the exit code: 1 when discovery, the file or the patch fails, 2 for an
// unusable flag, variable or config file (the message on `err`, naming the
// variable when the value came from one).
int RunLabels(const GlobalOptions& global, LabelsOptions& options,
              std::ostream& out, std::ostream& err);

}  // namespace gpulet::cli
