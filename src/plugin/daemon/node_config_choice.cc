#include "src/plugin/daemon/node_config_choice.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpulet::daemon {
namespace {

// A name that is a plain file name in the directory: what a label value
// (letters, digits, '-', '_', '.') or a ConfigMap key can be, never a path.
bool PlainName(const std::string& name) {
  if (name.empty() || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

NodeConfigChoice Named(const NodeConfigOptions& options,
                       const std::string& name) {
  return {.name = name,
          .file = (std::filesystem::path(options.dir) / name).string()};
}

absl::StatusOr<NodeConfigChoice> Fallback(
    const NodeConfigOptions& options,
    const std::vector<std::string>& available) {
  for (const std::string& strategy : options.fallbacks) {
    if (strategy == kFallbackNamed && Has(available, kNamedFallbackConfig)) {
      return Named(options, kNamedFallbackConfig);
    }
    if (strategy == kFallbackSingle && available.size() == 1) {
      return Named(options, available[0]);
    }
    if (strategy == kFallbackEmpty) return NodeConfigChoice{};
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "node ", options.node_name, " has no label ", options.label,
      ", --default-config is not set, and no fallback strategy (",
      absl::StrJoin(options.fallbacks, ","), ") applies to the configurations ",
      "in ", options.dir, " [", absl::StrJoin(available, ", "), "]"));
}

}  // namespace

absl::Status ValidateNodeConfigOptions(const NodeConfigOptions& options) {
  if (!options.enabled()) return absl::OkStatus();
  if (options.node_name.empty()) {
    return absl::InvalidArgumentError(
        "--config-dir needs the node's name (NODE_NAME) to read its label");
  }
  if (options.label.empty()) {
    return absl::InvalidArgumentError("--config-label: empty");
  }
  for (const std::string& s : options.fallbacks) {
    if (s != kFallbackNamed && s != kFallbackSingle && s != kFallbackEmpty) {
      return absl::InvalidArgumentError(
          absl::StrCat("--fallback-strategies: unknown strategy \"", s,
                       "\" (want named, single or empty)"));
    }
  }
  if (!options.default_name.empty() && !PlainName(options.default_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--default-config: \"", options.default_name,
                     "\" is not a configuration name (letters, digits, '-', "
                     "'_', '.'; not starting with '.')"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ListNodeConfigs(
    const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("--config-dir ", dir,
                     ": cannot list the configurations: ", ec.message()));
  }
  std::vector<std::string> names;
  for (const std::filesystem::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    std::error_code type_ec;
    if (PlainName(name) && entry.is_regular_file(type_ec)) {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<NodeConfigChoice> ChooseNodeConfig(
    const NodeConfigOptions& options, const std::optional<std::string>& label,
    const std::vector<std::string>& available) {
  if (label.has_value()) {
    if (!PlainName(*label) || !Has(available, *label)) {
      return absl::NotFoundError(
          absl::StrCat("node ", options.node_name, " has label ", options.label,
                       "=", *label, ", which names no configuration in ",
                       options.dir, " [", absl::StrJoin(available, ", "), "]"));
    }
    return Named(options, *label);
  }
  if (!options.default_name.empty()) {
    if (!Has(available, options.default_name)) {
      return absl::NotFoundError(
          absl::StrCat("--default-config ", options.default_name,
                       " names no configuration in ", options.dir, " [",
                       absl::StrJoin(available, ", "), "]"));
    }
    return Named(options, options.default_name);
  }
  return Fallback(options, available);
}

}  // namespace gpulet::daemon
