// Unix socket paths that gRPC servers facing the kubelet listen on (the
// device plugin's, the DRA plugin's and its registration socket): the checks
// before binding, and the removal of a socket a killed process left behind.
//
// Thread safety: stateless functions.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace gpulet::common {

// `name` is a plain file name, <dir>/<name> (== `path`) fits a sockaddr_un,
// and `dir` is a directory. InvalidArgument, NotFound or FailedPrecondition
// naming the path or directory.
absl::Status CheckSocketPath(const std::string& dir, const std::string& name,
                             const std::string& path);

// Removes a socket file at `path` (a stale one would make bind() fail);
// nothing there is fine; anything that is not a socket is left alone and is
// FailedPrecondition.
absl::Status RemoveStaleSocket(const std::string& path);

}  // namespace gpulet::common
