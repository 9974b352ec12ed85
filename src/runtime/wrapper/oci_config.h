// An OCI bundle's config.json held as nlohmann::json, so that every field
// gpulet-runtime does not touch (including ones newer than this code) is
// written back as it was read. Helpers here read and edit the few fields
// device injection needs: process.env, process.capabilities, annotations,
// mounts, linux.devices, linux.resources.devices and hooks.
//
// Thread safety: pure functions over values the caller owns.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gpulet::runtime {

// Parses config.json text and checks the fields the runtime relies on:
// `root` (an object with a string `path`) and `process` (an object whose
// `env`, when present, is a list of strings). `source` (the file's path)
// prefixes every error, which names the offending field.
absl::StatusOr<nlohmann::json> ParseOciConfig(absl::string_view text,
                                              const std::string& source);

// The compact JSON text of `config`.
std::string SerializeOciConfig(const nlohmann::json& config);

// The value of `key` in process.env (the last entry wins, as in execve's
// consumers); nullopt when unset.
std::optional<std::string> GetProcessEnv(const nlohmann::json& config,
                                         const std::string& key);

// Sets "KEY=value" in process.env, replacing every entry with the same key
// in place of the first, or appending.
void SetProcessEnv(nlohmann::json& config, const std::string& entry);

// True when the container is privileged in nvidia-container-toolkit's sense:
// CAP_SYS_ADMIN is in process.capabilities.bounding.
bool IsPrivileged(const nlohmann::json& config);

// Writes `contents` to `path` through a temporary file in the same
// directory and rename(2), keeping the file mode of the file it replaces.
// No fsync: runc reads the file at once and a crash ends the container too.
absl::Status ReplaceFile(const std::string& path, absl::string_view contents);

}  // namespace gpulet::runtime
