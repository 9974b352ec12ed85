// Small file helpers that report errors as absl::Status naming the path.
// Thread safety: stateless.
#pragma once

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace gpulet::common {

// Reads a whole file. Errors: NotFound / PermissionDenied / Internal with
// "read <path>: <reason>".
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` to `path` atomically: a temporary file in the same
// directory, fsync, then rename over the target.
absl::Status WriteFileAtomic(const std::string& path, absl::string_view contents);

}  // namespace gpulet::common
