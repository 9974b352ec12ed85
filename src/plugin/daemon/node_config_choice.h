// Which of several named configuration files a node runs with
// (docs/configuration.md, "One configuration per node"): the way NVIDIA's
// config-manager picks one for its device plugin. A directory holds one
// file per named configuration (a ConfigMap mounted as a volume: its keys
// are the names); the node's label (`nvidia.com/device-plugin.config` by
// default) names the one to use; without the label, the default name;
// without a default, the fallback strategies in order:
//   named   the configuration named "default", if there is one;
//   single  the only configuration, if there is exactly one;
//   empty   no file at all (flags and environment only).
// A label or default naming a configuration that is not there is an error,
// never a silent fallback: the operator asked for that one.
//
// Thread safety: pure functions (ListNodeConfigs reads the directory).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpulet::daemon {

inline constexpr char kNodeConfigLabel[] = "nvidia.com/device-plugin.config";
inline constexpr char kFallbackNamed[] = "named";
inline constexpr char kFallbackSingle[] = "single";
inline constexpr char kFallbackEmpty[] = "empty";
// The configuration the `named` strategy looks for.
inline constexpr char kNamedFallbackConfig[] = "default";

struct NodeConfigOptions {
  // --config-dir: one file per named configuration. Empty: off (the one
  // --config-file is used).
  std::string dir;
  // --config-label: the Node label that names the configuration.
  std::string label = kNodeConfigLabel;
  // --default-config: used when the Node has no such label.
  std::string default_name;
  // --fallback-strategies: when there is neither a label nor a default.
  std::vector<std::string> fallbacks = {kFallbackNamed, kFallbackSingle};
  // The Node whose label is read (NODE_NAME).
  std::string node_name;

  bool enabled() const { return !dir.empty(); }
};

// The configuration chosen: its name ("" with the `empty` strategy) and
// its file ("" for no file).
struct NodeConfigChoice {
  std::string name;
  std::string file;
  bool operator==(const NodeConfigChoice&) const = default;
};

// Checks the options (a non-empty node name and label, known fallback
// strategies); InvalidArgument naming the flag otherwise.
absl::Status ValidateNodeConfigOptions(const NodeConfigOptions& options);

// The names of the configurations in `dir`: the entries that are regular
// files (symbolic links followed, as a ConfigMap volume's keys are), not
// starting with "." (the volume's own ..data entries), sorted. An error
// naming the directory when it cannot be read.
absl::StatusOr<std::vector<std::string>> ListNodeConfigs(
    const std::string& dir);

// The configuration for a Node whose label is `label` (nullopt: the Node
// has no such label), among `available` (ListNodeConfigs's names).
// NotFound naming the label or default when it names no configuration;
// FailedPrecondition when no strategy applies.
absl::StatusOr<NodeConfigChoice> ChooseNodeConfig(
    const NodeConfigOptions& options, const std::optional<std::string>& label,
    const std::vector<std::string>& available);

}  // namespace gpulet::daemon
