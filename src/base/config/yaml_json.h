// YAML text <-> nlohmann::ordered_json, for formats that are defined as JSON
// but commonly written as YAML (CDI specs). Lives in config/ so that layers
// above read YAML through it rather than through yaml-cpp; the JSON value it
// produces is what callers decode with their own strict field checks.
//
// Scalars resolve as in YAML 1.2's core schema: quoted scalars and explicit
// !!str are strings; plain scalars are null (`null`, `~`, empty), booleans
// (`true`/`false` in any of the three spellings), integers (decimal, 0x, 0o),
// floats, or else strings. Map keys are always strings. Duplicate keys are
// an error (as in Go's yaml.v3). Only the first document is read.
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gpulet::config {

// Parses YAML (JSON is accepted as the YAML subset it is). Errors are
// InvalidArgument "<source>:<line>:<col>: <what>". Bounded: nesting deeper
// than 64 levels or more than 100,000 nodes (alias bombs) is rejected.
absl::StatusOr<nlohmann::ordered_json> YamlToJson(absl::string_view text,
                                                  const std::string& source);

// Block-style YAML for a JSON value, keys in the value's order. Strings that
// would read back as something else (numbers, booleans, null, "0:1") are
// double-quoted, so YamlToJson(JsonToYaml(v)) == v for every value without
// floats NaN/Inf. Ends with a newline.
std::string JsonToYaml(const nlohmann::ordered_json& value);

}  // namespace gpulet::config
