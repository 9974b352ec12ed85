// Typed, position-aware reading of yaml-cpp nodes for the config parser.
// Errors read "<source>:<line>:<col>: <key path>: <what>" (config_errors.h).
//
// Nothing here throws: values come from Node::Scalar() and are converted by
// hand, never through yaml-cpp's throwing as<T>(). Field, key paths and the
// wording of values and unknown keys are src/base/yaml's, shared with the
// simulator's machine parser. Internal to gpulet_config; not thread-safe
// (a reader records origins into the Config being built).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/base/config/config.h"
#include "src/base/config/config_errors.h"
#include "src/base/yaml/fields.h"
#include "yaml-cpp/yaml.h"

namespace gpulet::config::internal {

using yaml::Field;

class YamlReader {
 public:
  // REQUIRES: `origins` outlives the reader.
  YamlReader(std::string source, Origins* origins)
      : source_(std::move(source)), origins_(origins) {}

  // Records `field`'s position as its path's origin.
  void Record(const Field& field);
  absl::Status Error(const Field& field, absl::string_view what) const;

  // The entries of a map whose keys are scalars, unique and among
  // `allowed`. Keys match ignoring case, as NVIDIA's JSON-based parser
  // matches them, and come back in the allowed spelling. Entries whose
  // value is null are left out: NVIDIA treats them as unset. A null map
  // reads as empty.
  absl::StatusOr<std::vector<Field>> Map(
      const Field& field, const std::vector<std::string>& allowed) const;
  // The items of a list of at most `max_items`; a null list reads as empty.
  absl::StatusOr<std::vector<Field>> List(const Field& field,
                                          size_t max_items) const;

  // A scalar without control characters, at most `max_len` long.
  absl::StatusOr<std::string> String(const Field& field,
                                     size_t max_len = 4096) const;
  // true/false, yes/no, on/off, y/n in any case (YAML 1.1, as NVIDIA's
  // parser reads them).
  absl::StatusOr<bool> Bool(const Field& field) const;
  // A decimal integer in [-1e9, 1e9]; range rules belong to Validate.
  absl::StatusOr<int64_t> Int(const Field& field) const;
  // A scalar spelled exactly as one of `names`.
  template <typename E>
  absl::StatusOr<E> Enum(const Field& field, const EnumNames<E>& names) const;

 private:
  absl::StatusOr<size_t> MatchName(const Field& field,
                                   const std::vector<std::string>& names) const;

  std::string source_;
  Origins* origins_;
};

template <typename E>
absl::StatusOr<E> YamlReader::Enum(const Field& field,
                                   const EnumNames<E>& names) const {
  std::vector<std::string> keys;
  keys.reserve(names.size());
  for (const auto& [name, value] : names) keys.push_back(name);
  GPULET_ASSIGN_OR_RETURN(size_t index, MatchName(field, keys));
  return names[index].second;
}

}  // namespace gpulet::config::internal
