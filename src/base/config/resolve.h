// Merging the sources of configuration with NVIDIA k8s-device-plugin's
// precedence: a flag given on the command line beats its environment
// variable, which beats the config file, which beats the default.
//
// Only what was set counts: a flag the command line did not give, or an
// environment variable that is unset or empty, leaves the file's value (or
// the default) alone. The CLI therefore reports only the flags it actually
// saw (FlagValues), never their defaults.
//
// Thread safety: pure functions, apart from ProcessEnvironment() reading
// the process environment (getenv) when called.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/base/config/config.h"

namespace gpulet::config {

// The flags given on the command line, keyed by the name used (canonical
// name or alias from FlagTable(), without dashes), each occurrence's value
// in order. A bare boolean flag is recorded as "" (meaning true); list
// values may be comma-separated.
using FlagValues = std::map<std::string, std::vector<std::string>>;

// The value of an environment variable, or nullopt when it is unset.
using EnvLookup =
    std::function<std::optional<std::string>(const std::string& name)>;

// Looks variables up in this process's environment.
EnvLookup ProcessEnvironment();

// The config file to read: --config-file if given, else CONFIG_FILE if set
// and non-empty, else none.
std::optional<std::string> ConfigFilePath(const FlagValues& cli,
                                          const EnvLookup& env);

// `file` (or defaults when there is none) overridden by the environment,
// then by the command line; the dev root defaults to the driver root; then
// Validate. Each value applied records its origin ("flag --mig-strategy",
// "environment variable MIG_STRATEGY") so that errors name it:
//   "flag --device-id-strategy: flags.plugin.deviceIDStrategy: unknown
//    value "foo" (expected one of: uuid, index)"
// Errors: InvalidArgument for an unknown flag name, a flag given under two
// of its names, an unusable value, or a broken rule.
absl::StatusOr<Config> Resolve(const FlagValues& cli, const EnvLookup& env,
                               const std::optional<Config>& file);

// ConfigFilePath, LoadConfigFile when there is one, then Resolve.
absl::StatusOr<Config> LoadAndResolve(const FlagValues& cli,
                                      const EnvLookup& env);

}  // namespace gpulet::config
