// Conversions of OS error reports into absl::Status, done in one place so
// every message names the call and the object it was about.
//
// Thread safety: pure functions.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gpulet::common {

// Status for a failed system call: "<what>: <strerror(err)>", with a code
// chosen from errno (ENOENT -> NotFound, EACCES/EPERM -> PermissionDenied,
// EEXIST -> AlreadyExists, EINVAL -> InvalidArgument, else Internal).
// REQUIRES: err != 0.
absl::Status ErrnoToStatus(int err, absl::string_view what);

// Prefixes a non-OK status message with context; OK stays OK.
absl::Status Annotate(const absl::Status& status, absl::string_view context);

}  // namespace gpulet::common
