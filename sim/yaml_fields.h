// Typed, position-aware reading of yaml-cpp nodes for the machine parser.
// Every error reads "<source>:<line>:<col>: <key path>: <what>" with 1-based
// line and column, so a user can jump to the offending value.
//
// Nothing here throws: values are read from Node::Scalar() and converted by
// hand, never through yaml-cpp's throwing as<T>(). Internal to
// gpulet_sim_model; stateless apart from the values passed in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/base/common/status_macros.h"
#include "src/base/yaml/fields.h"
#include "yaml-cpp/yaml.h"

namespace gpulet::sim::yaml {

// Field, paths and messages are the ones the config parser uses.
using ::gpulet::yaml::Field;
using ::gpulet::yaml::IndexPath;
using ::gpulet::yaml::JoinPath;

// The file being parsed, for messages.
struct Ctx {
  std::string source;
};

// InvalidArgument "<source>:<line>:<col>: <path>: <what>"; the position part
// is left out when `mark` is null, the path part when `path` is empty.
absl::Status ErrorAt(const Ctx& ctx, const YAML::Mark& mark,
                     absl::string_view path, absl::string_view what);
absl::Status FieldError(const Ctx& ctx, const Field& field,
                        absl::string_view what);

// A YAML map whose keys are all scalars, unique and among `allowed`.
// Optionally falls back to another map for keys it lacks (gpuDefaults).
class MapView {
 public:
  static absl::StatusOr<MapView> Read(const Ctx& ctx, const Field& field,
                                      const std::vector<std::string>& allowed);

  // The value of `key` here, else in the fallback map.
  std::optional<Field> Find(absl::string_view key) const;
  // As Find, but a missing key is an error naming it.
  absl::StatusOr<Field> Require(absl::string_view key) const;
  bool Has(absl::string_view key) const { return Find(key).has_value(); }

  // REQUIRES: `fallback` outlives this view.
  void SetFallback(const MapView* fallback) { fallback_ = fallback; }
  const Field& self() const { return self_; }

 private:
  MapView(const Ctx* ctx, Field self) : ctx_(ctx), self_(std::move(self)) {}

  const Ctx* ctx_;
  Field self_;
  std::vector<std::pair<std::string, YAML::Node>> entries_;
  const MapView* fallback_ = nullptr;
};

// A YAML list of at most `max_items` items.
absl::StatusOr<std::vector<Field>> ReadList(const Ctx& ctx, const Field& field,
                                            size_t max_items);

// A scalar of at most `max_len` characters.
absl::StatusOr<std::string> ReadString(const Ctx& ctx, const Field& field,
                                       size_t max_len = 256);
// Decimal or 0x-hex integer in [min, max].
absl::StatusOr<uint64_t> ReadUint(const Ctx& ctx, const Field& field,
                                  uint64_t min, uint64_t max);
absl::StatusOr<int64_t> ReadInt(const Ctx& ctx, const Field& field, int64_t min,
                                int64_t max);
absl::StatusOr<bool> ReadBool(const Ctx& ctx, const Field& field);
// A byte count: an integer, or a number with a unit B, KiB, MiB, GiB, TiB
// ("40GiB", "81559 MiB", "4.75GiB"). At most `max` bytes.
absl::StatusOr<uint64_t> ReadBytes(const Ctx& ctx, const Field& field,
                                   uint64_t max);
// Numbers from "0-63,128-191", an integer, or a list of integers and range
// strings; each at most `max_value`. Sorted, without duplicates.
absl::StatusOr<std::vector<unsigned>> ReadIndexList(const Ctx& ctx,
                                                    const Field& field,
                                                    unsigned max_value);

// A scalar matched, ignoring case, against `names`; the error lists them.
template <typename T>
absl::StatusOr<T> ReadEnum(const Ctx& ctx, const Field& field,
                           const std::vector<std::pair<std::string, T>>& names);

// Helper for ReadEnum: index of `value` in `names` (case-insensitive), or
// an error listing the valid names.
absl::StatusOr<size_t> MatchName(const Ctx& ctx, const Field& field,
                                 const std::vector<std::string>& names);

template <typename T>
absl::StatusOr<T> ReadEnum(
    const Ctx& ctx, const Field& field,
    const std::vector<std::pair<std::string, T>>& names) {
  std::vector<std::string> keys;
  keys.reserve(names.size());
  for (const auto& [name, value] : names) keys.push_back(name);
  GPULET_ASSIGN_OR_RETURN(size_t index, MatchName(ctx, field, keys));
  return names[index].second;
}

// Reads `key` from `map` with `read` into `*out` when present.
template <typename T, typename Reader>
absl::Status ReadOptional(const MapView& map, absl::string_view key, T* out,
                          Reader&& read) {
  std::optional<Field> field = map.Find(key);
  if (!field) return absl::OkStatus();
  auto value = read(*field);
  if (!value.ok()) return value.status();
  *out = static_cast<T>(*std::move(value));
  return absl::OkStatus();
}

}  // namespace gpulet::sim::yaml
