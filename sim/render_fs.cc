#include "sim/render_fs.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"

namespace gpulet::sim::render {
namespace {

absl::Status FromErrorCode(const std::error_code& ec, absl::string_view what) {
  return common::ErrnoToStatus(ec.value(), what);
}

// Removes `path` whatever it is; a missing path is fine.
absl::Status RemoveAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return FromErrorCode(ec, absl::StrCat("remove ", path));
  return absl::OkStatus();
}

}  // namespace

absl::Status EnsureDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return FromErrorCode(ec, absl::StrCat("mkdir ", path));
  return absl::OkStatus();
}

absl::Status WriteFile(const std::string& path, absl::string_view contents,
                       mode_t mode) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      (st.st_mode & 07777) == mode &&
      static_cast<size_t>(st.st_size) == contents.size()) {
    absl::StatusOr<std::string> old = common::ReadFile(path);
    if (old.ok() && *old == contents) return absl::OkStatus();
  }
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    if (absl::Status s = RemoveAll(path); !s.ok()) return s;
  }
  common::WriteOptions options;
  options.mode = mode;
  // Atomic for readers, but not synced: a simulated node need not survive
  // a crash of the machine, and a sync per file made rendering take seconds.
  options.durable = false;
  return common::WriteFileAtomic(path, contents, options);
}

absl::Status Symlink(const std::string& target, const std::string& path) {
  char buf[4096];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  if (n >= 0 && std::string(buf, static_cast<size_t>(n)) == target) {
    return absl::OkStatus();
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    if (absl::Status s = RemoveAll(path); !s.ok()) return s;
  }
  const std::string tmp = absl::StrCat(path, ".gpulet-tmp");
  ::unlink(tmp.c_str());
  if (::symlink(target.c_str(), tmp.c_str()) != 0) {
    return common::ErrnoToStatus(errno, absl::StrCat("symlink ", tmp));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return common::ErrnoToStatus(err, absl::StrCat("rename to ", path));
  }
  return absl::OkStatus();
}

absl::Status CharDevice(const std::string& path, unsigned major, unsigned minor,
                        DevNodes how) {
  const dev_t want = makedev(major, minor);
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    const bool same = how == DevNodes::kMknod
                          ? S_ISCHR(st.st_mode) && st.st_rdev == want
                          : S_ISREG(st.st_mode);
    if (same) return absl::OkStatus();
    if (absl::Status s = RemoveAll(path); !s.ok()) return s;
  }
  if (how == DevNodes::kFiles) return WriteFile(path, "", 0666);
  if (::mknod(path.c_str(), S_IFCHR | 0666, want) != 0) {
    const int err = errno;
    if (err == EPERM) {
      return absl::PermissionDeniedError(absl::StrCat(
          "mknod ", path, " (", major, ":", minor,
          "): not permitted: device nodes need root (CAP_MKNOD); "
          "render them as empty files instead with --dev-nodes=files"));
    }
    return common::ErrnoToStatus(err, absl::StrCat("mknod ", path));
  }
  // mknod's mode is filtered by the umask; the driver's nodes are 0666.
  if (::chmod(path.c_str(), 0666) != 0) {
    return common::ErrnoToStatus(errno, absl::StrCat("chmod ", path));
  }
  return absl::OkStatus();
}

absl::Status RemoveStale(const std::string& dir,
                         const std::function<bool(const std::string&)>& stale) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return absl::OkStatus();
    return FromErrorCode(ec, absl::StrCat("list ", dir));
  }
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (!stale(name)) continue;
    if (absl::Status s = RemoveAll(entry.path().string()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gpulet::sim::render
