// The config parser's pieces, one function per file section, and the
// key -> handler dispatch they share. Internal to gpulet_config.
//
// Thread safety: a ParseContext belongs to one ParseConfig call.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "src/base/config/config.h"
#include "src/base/config/yaml_reader.h"

namespace gpulet::config::internal {

struct ParseContext {
  YamlReader reader;
  Config* config;
};

// Reads a value into its destination; returns the error naming the field.
using Handler = std::function<absl::Status(const Field&)>;
using Handlers = std::vector<std::pair<std::string, Handler>>;

// Reads the map at `field`: every key must be one of `handlers`' names;
// each present, non-null value's origin is recorded and its handler run.
absl::Status ReadMap(ParseContext& ctx, const Field& field,
                     const Handlers& handlers);

Handler SetBool(ParseContext& ctx, bool* out);
Handler SetString(ParseContext& ctx, std::string* out);
// A key NVIDIA's file has but gpulet does not use: type-checked
// (bool or string), then listed in Config::ignored_keys.
Handler IgnoredBool(ParseContext& ctx);
Handler IgnoredString(ParseContext& ctx);

template <typename E>
Handler SetEnum(ParseContext& ctx, E* out, const EnumNames<E>& names) {
  return [&ctx, out, &names](const Field& f) -> absl::Status {
    GPULET_ASSIGN_OR_RETURN(*out, ctx.reader.Enum(f, names));
    return absl::OkStatus();
  };
}

// A Go-style duration ("30s", "5m", "1h30m", "0"), non-negative and finite.
absl::Status ReadDuration(ParseContext& ctx, const Field& field,
                          std::optional<absl::Duration>* out);

// A resource name, qualified with "nvidia.com/" (QualifyResourceName).
absl::StatusOr<std::string> ReadResourceName(ParseContext& ctx,
                                             const Field& field);

absl::Status ParseFlags(ParseContext& ctx, const Field& field);
absl::Status ParseResources(ParseContext& ctx, const Field& field);
absl::Status ParseSharing(ParseContext& ctx, const Field& field);
absl::Status ParseImex(ParseContext& ctx, const Field& field);
// health.* and metrics.* (gpulet's own sections), in parser_health.cc.
absl::Status ParseHealth(ParseContext& ctx, const Field& field);
absl::Status ParseMetrics(ParseContext& ctx, const Field& field);
// dra.* (gpulet's own section, read by `gpulet dra`), in parser_health.cc.
absl::Status ParseDra(ParseContext& ctx, const Field& field);
// passthrough.*, in parser_passthrough.cc.
absl::Status ParsePassthrough(ParseContext& ctx, const Field& field);

}  // namespace gpulet::config::internal
