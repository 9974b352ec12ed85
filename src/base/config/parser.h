// Reading NVIDIA k8s-device-plugin's `version: v1` configuration file
// (YAML, or JSON, which is YAML too) into a Config. Keys match NVIDIA's
// api/config/v1 spelling; unlike NVIDIA, an unknown key is an error naming
// its key path, so a typo cannot silently fall back to a default.
//
// The parser fills in what NVIDIA's parser fills in: a missing version is
// "v1", resource names get the "nvidia.com/" prefix, renameByDefault gives
// each unrenamed shared resource "<name>.shared", devices default to all,
// sharing.mps.failRequestsGreaterThanOne defaults to true. It then checks
// every rule that concerns a value alone (ValidateValues in validate.h);
// rules that tie values together, such as MPS needing mpsRoot, wait for
// Resolve, because flags or the environment may complete the file.
//
// Errors are InvalidArgument "<source>:<line>:<col>: <key path>: <what>"
// (line and column 1-based). No exception escapes.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "src/base/config/config.h"

namespace gpulet::config {

// Larger files are refused before parsing.
inline constexpr size_t kMaxConfigFileBytes = size_t{1} << 20;

// `source` names the text in messages and origins (usually its path).
absl::StatusOr<Config> ParseConfig(const std::string& yaml,
                                   const std::string& source);

// ReadFile + ParseConfig with the path as source.
absl::StatusOr<Config> LoadConfigFile(const std::string& path);

}  // namespace gpulet::config
