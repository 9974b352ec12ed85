// Small file helpers that report errors as absl::Status naming the path.
// Thread safety: stateless.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::common {

// The largest file ReadFile reads unless told otherwise.
inline constexpr size_t kDefaultMaxFileSize = size_t{64} << 20;

// Reads a whole regular file of at most `max_bytes` bytes (procfs and sysfs
// files are regular files; their reported size is not trusted, the bytes
// read are counted). The file is opened with O_NONBLOCK, so a FIFO or a
// device planted at `path` neither blocks nor is read: anything but a
// regular file is refused after fstat. Errors: NotFound / PermissionDenied
// / Internal with "read <path>: <reason>", FailedPrecondition "read <path>:
// not a regular file", ResourceExhausted "read <path>: larger than <n>
// bytes".
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     size_t max_bytes = kDefaultMaxFileSize);

// Writes all of `contents` to `fd`, retrying short writes and EINTR.
// Errors: "write <name>: <reason>".
absl::Status WriteAll(int fd, absl::string_view contents,
                      const std::string& name);

struct WriteOptions {
  // Permissions of the new file (before the umask is applied: none is).
  unsigned mode = 0644;
  // fsync the file before the rename and the directory after it, so the new
  // contents survive a crash of the machine. Off only for files that do not
  // outlive the operation writing them (an OCI bundle's config.json).
  bool durable = true;
};

// Writes `contents` to `path` atomically: readers see the old file or the
// new one, never a mix. The temporary file is created in the same
// directory under an unpredictable name with O_EXCL | O_NOFOLLOW (nothing
// planted there can redirect the write), written whole, given `mode`,
// synced (durable), renamed over `path`, and the directory synced
// (durable). On any failure the temporary file is removed, no descriptor is
// left open and `path` is unchanged. Errors name the step and the path.
absl::Status WriteFileAtomic(const std::string& path,
                             absl::string_view contents,
                             const WriteOptions& options = {});

}  // namespace gpulet::common
