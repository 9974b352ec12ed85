#include "src/base/common/file_util.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::common {

namespace {

absl::Status ReadAll(int fd, const std::string& path, size_t max_bytes,
                     std::string& out) {
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, absl::StrCat("read ", path));
    if (n == 0) return absl::OkStatus();
    if (static_cast<size_t>(n) > max_bytes - out.size()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("read ", path, ": larger than ", max_bytes, " bytes"));
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
  // writer. O_NOCTTY: a terminal planted here must not become ours.
  UniqueFd fd(
      ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return ErrnoToStatus(errno, absl::StrCat("read ", path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("read ", path));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("read ", path, ": not a regular file"));
  }
  if (st.st_size > 0 && static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("read ", path, ": larger than ", max_bytes, " bytes"));
  }
  // Regular files ignore O_NONBLOCK, but procfs and sysfs handlers may not.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("read ", path));
  }
  std::string out;
  if (st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  if (absl::Status s = ReadAll(fd.get(), path, max_bytes, out); !s.ok()) {
    return s;
  }
  return out;
}

namespace {

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// An unpredictable suffix for the temporary file's name.
std::string RandomSuffix() {
  uint64_t bits = 0;
  if (::getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != sizeof(bits)) {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    bits = static_cast<uint64_t>(ts.tv_nsec) ^
           (static_cast<uint64_t>(::getpid()) << 32) ^
           reinterpret_cast<uintptr_t>(&ts);
  }
  return absl::StrCat(absl::Hex(bits, absl::kZeroPad16));
}

absl::Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("open ", dir));
  absl::Status status;
  if (::fsync(fd) != 0)
    status = ErrnoToStatus(errno, absl::StrCat("sync ", dir));
  ::close(fd);
  return status;
}

}  // namespace

absl::Status WriteAll(int fd, absl::string_view contents,
                      const std::string& name) {
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, absl::StrCat("write ", name));
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomic(const std::string& path,
                             absl::string_view contents,
                             const WriteOptions& options) {
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    tmp = absl::StrCat(path, ".tmp-", RandomSuffix());
    fd = ::open(tmp.c_str(),
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  // The temporary file's name means nothing to the caller: name the file
  // asked for, and the directory when that is what is missing.
  if (fd < 0 && errno == ENOENT) {
    return absl::NotFoundError(absl::StrCat("write ", path, ": directory ",
                                            DirOf(path), " does not exist"));
  }
  if (fd < 0) {
    return ErrnoToStatus(
        errno,
        absl::StrCat("write ", path, ": create a file in ", DirOf(path)));
  }
  absl::Status status = WriteAll(fd, contents, tmp);
  if (status.ok() && ::fchmod(fd, static_cast<mode_t>(options.mode)) != 0) {
    status = ErrnoToStatus(errno, absl::StrCat("chmod ", tmp));
  }
  if (status.ok() && options.durable && ::fsync(fd) != 0) {
    status = ErrnoToStatus(errno, absl::StrCat("sync ", tmp));
  }
  if (::close(fd) != 0 && status.ok()) {
    status = ErrnoToStatus(errno, absl::StrCat("close ", tmp));
  }
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoToStatus(errno, absl::StrCat("rename ", tmp, " to ", path));
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  return options.durable ? SyncDir(DirOf(path)) : absl::OkStatus();
}

}  // namespace gpulet::common
