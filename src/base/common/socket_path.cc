#include "src/base/common/socket_path.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"

namespace gpulet::common {

absl::Status CheckSocketPath(const std::string& dir, const std::string& name,
                             const std::string& path) {
  if (name.empty() || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "socket name \"", name, "\" must be a plain file name in ", dir));
  }
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path ", path, " is ", path.size(),
                     " bytes; unix sockets allow at most ",
                     sizeof(sockaddr_un::sun_path) - 1));
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return common::ErrnoToStatus(errno, absl::StrCat("plugin directory ", dir));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("plugin directory ", dir, " is not a directory"));
  }
  return absl::OkStatus();
}

absl::Status RemoveStaleSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return common::ErrnoToStatus(errno, absl::StrCat("stat ", path));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a socket; not removing it"));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return common::ErrnoToStatus(errno,
                                 absl::StrCat("remove stale socket ", path));
  }
  GPULET_LOG(INFO) << "removed stale socket " << path;
  return absl::OkStatus();
}

}  // namespace gpulet::common
