// The pieces of reading YAML that the config parser and the NVML
// simulator's machine parser share: a value with its key path, how paths
// are spelled, and how values and unknown keys are named in messages. Each
// parser keeps its own readers (config matches keys as NVIDIA's JSON-based
// parser does, the machine file is strict); both build on these.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace gpulet::yaml {

// One value and the key path that leads to it ("gpus[2].uuid").
struct Field {
  YAML::Node node;
  std::string path;
};

// "parent.key", or "key" when parent is empty.
std::string JoinPath(absl::string_view parent, absl::string_view key);
// "parent[index]".
std::string IndexPath(absl::string_view parent, size_t index);

// `s` C-escaped in double quotes for a message, cut at 60 characters
// ("...\"" marks the cut).
std::string Quote(absl::string_view s);

// A node for messages: "a list", "a map", "nothing (null)" or the quoted
// scalar.
std::string Describe(const YAML::Node& node);

// "unknown key \"name\"" followed by the nearest allowed key (edit
// distance below 3, ignoring case) as "(did you mean \"key\"?)", or else
// by "(known keys: a, b)".
std::string UnknownKey(const std::string& name,
                       const std::vector<std::string>& allowed);

}  // namespace gpulet::yaml
