#include "src/base/config/resolve.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "src/base/config/config_errors.h"
#include "src/base/config/flag_table.h"
#include "src/base/config/parser.h"
#include "src/base/config/validate.h"

namespace gpulet::config {
namespace {

// "a, b" -> {"a", "b"}; empty items are dropped, so "" is an empty list.
std::vector<std::string> SplitList(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& value : values) {
    for (absl::string_view item : absl::StrSplit(value, ',')) {
      item = absl::StripAsciiWhitespace(item);
      if (!item.empty()) out.emplace_back(item);
    }
  }
  return out;
}

absl::Status ApplyValues(const FlagSpec& spec,
                         const std::vector<std::string>& values, Origin origin,
                         Config* config) {
  // The new source replaces the old one for the key and its list items.
  auto& origins = config->origins;
  const std::string item_prefix = spec.config_key + "[";
  for (auto it = origins.lower_bound(item_prefix);
       it != origins.end() && absl::StartsWith(it->first, item_prefix);) {
    it = origins.erase(it);
  }
  origins[spec.config_key] = std::move(origin);
  absl::Status s = spec.apply(
      spec.kind == FlagKind::kList ? SplitList(values) : values, config);
  if (s.ok()) return s;
  return internal::PathError(origins, spec.config_key, s.message());
}

// The values the command line gave `spec` and the name it used; an error
// when it used two of the flag's names.
absl::Status FindCliValues(const FlagSpec& spec, const FlagValues& cli,
                           std::string* used,
                           const std::vector<std::string>** values) {
  std::vector<std::string> names = spec.aliases;
  names.insert(names.begin(), spec.name);
  for (const std::string& name : names) {
    auto it = cli.find(name);
    if (it == cli.end()) continue;
    if (*values != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --", *used, " and its alias --", name,
                       " were both given; use one"));
    }
    *used = name;
    *values = &it->second;
  }
  return absl::OkStatus();
}

// A given flag hides its variables entirely, so a bad variable value
// cannot fail a start-up whose command line overrides it.
absl::Status ApplyFlag(const FlagSpec& spec, const FlagValues& cli,
                       const EnvLookup& env, Config* config) {
  std::string used;
  const std::vector<std::string>* values = nullptr;
  GPULET_RETURN_IF_ERROR(FindCliValues(spec, cli, &used, &values));
  if (values != nullptr) {
    return ApplyValues(spec, *values, Origin{absl::StrCat("flag --", used)},
                       config);
  }
  for (const std::string& var : spec.env_vars) {
    std::optional<std::string> value = env ? env(var) : std::nullopt;
    if (!value || value->empty()) continue;
    return ApplyValues(spec, {*value},
                       Origin{absl::StrCat("environment variable ", var)},
                       config);
  }
  return absl::OkStatus();
}

}  // namespace

EnvLookup ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<std::string> ConfigFilePath(const FlagValues& cli,
                                          const EnvLookup& env) {
  auto it = cli.find(kConfigFileFlag);
  if (it != cli.end() && !it->second.empty()) {
    if (it->second.back().empty()) return std::nullopt;
    return it->second.back();
  }
  for (const std::string& var : FindFlag(kConfigFileFlag)->env_vars) {
    std::optional<std::string> value = env ? env(var) : std::nullopt;
    if (value && !value->empty()) return value;
  }
  return std::nullopt;
}

absl::StatusOr<Config> Resolve(const FlagValues& cli, const EnvLookup& env,
                               const std::optional<Config>& file) {
  for (const auto& [name, values] : cli) {
    if (FindFlag(name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
  }
  Config config = file.value_or(Config{});
  for (const FlagSpec& spec : FlagTable()) {
    if (!spec.apply) continue;
    GPULET_RETURN_IF_ERROR(ApplyFlag(spec, cli, env, &config));
  }
  if (config.flags.nvidia_dev_root.empty()) {
    config.flags.nvidia_dev_root = config.flags.nvidia_driver_root;
    auto root = config.origins.find("flags.nvidiaDriverRoot");
    if (root != config.origins.end()) {
      config.origins["flags.nvidiaDevRoot"] = root->second;
    }
  }
  GPULET_RETURN_IF_ERROR(Validate(config));
  return config;
}

absl::StatusOr<Config> LoadAndResolve(const FlagValues& cli,
                                      const EnvLookup& env) {
  std::optional<Config> file;
  if (std::optional<std::string> path = ConfigFilePath(cli, env)) {
    absl::StatusOr<Config> loaded = LoadConfigFile(*path);
    if (!loaded.ok()) return loaded.status();
    file = *std::move(loaded);
  }
  return Resolve(cli, env, file);
}

}  // namespace gpulet::config
