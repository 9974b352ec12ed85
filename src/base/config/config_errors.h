// Error plumbing shared by the config parser, validator and resolver: key
// paths, and the one error format "<origin>: <key path>: <what>", origin
// being "<source>:<line>:<col>" for a file value, "flag --x" or
// "environment variable X" otherwise. Internal to gpulet_config.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "src/base/common/status_macros.h"
#include "src/base/config/config.h"
#include "src/base/yaml/fields.h"

namespace gpulet::config::internal {

using yaml::IndexPath;
using yaml::JoinPath;

// InvalidArgument "<origin>: <path>: <what>" with the origin recorded for
// `path` or, failing that, its nearest recorded ancestor ("a.b[2].c" ->
// "a.b[2]" -> "a.b" -> "a"); no origin part when none is known.
absl::Status PathError(const Origins& origins, const std::string& path,
                       absl::string_view what);

using yaml::Quote;

// "unknown value "x" (expected one of: a, b)" for enum parsers outside YAML.
std::string UnknownValue(absl::string_view value,
                         const std::vector<std::string>& names);

template <typename E>
std::vector<std::string> NamesOf(const EnumNames<E>& names) {
  std::vector<std::string> out;
  for (const auto& [name, value] : names) out.push_back(name);
  return out;
}

}  // namespace gpulet::config::internal
