#include "src/runtime/wrapper/ldcache_jail.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::runtime {
namespace {

using Fd = common::UniqueFd;

absl::Status Errno(absl::string_view what) {
  return common::ErrnoToStatus(errno, what);
}

// mountinfo escapes ' ', '\t', '\n' and '\\' as a backslash and three
// octal digits.
std::string Unescape(absl::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() &&
        std::all_of(field.begin() + i + 1, field.begin() + i + 4,
                    [](char c) { return c >= '0' && c <= '7'; })) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 +
                                      (field[i + 2] - '0') * 8 +
                                      (field[i + 3] - '0')));
      i += 3;
      continue;
    }
    out.push_back(field[i]);
  }
  return out;
}

bool IsKernelFs(absl::string_view type) {
  return type == "proc" || type == "sysfs";
}

// The path an open descriptor names, as the kernel prints mount points.
absl::StatusOr<std::string> PathOf(int fd, const std::string& what) {
  char buf[4096];
  std::string link = absl::StrCat("/proc/self/fd/", fd);
  ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf));
  if (n < 0 || n == sizeof(buf)) {
    return Errno(absl::StrCat("readlink ", link, " (", what, ")"));
  }
  return std::string(buf, static_cast<size_t>(n));
}

bool IsKernelFsAt(const std::string& path) {
  Fd fd(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct statfs fs;
  if (!fd.valid() || ::fstatfs(fd.get(), &fs) != 0) return false;
  return fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC;
}

// Detaches the procfs or sysfs mounts stacked at `path` (relative to the
// new root). A path that is gone (its parent was detached first) or that
// now shows the image's own directory is done.
absl::Status DetachKernelMounts(const std::string& path,
                                const std::string& root) {
  for (int stacked = 0; IsKernelFsAt(path); ++stacked) {
    if (stacked == 64 ||
        ::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0) {
      return Errno(absl::StrCat("detach ", root, path));
    }
  }
  return absl::OkStatus();
}

absl::Status PivotInto(int new_root, const std::string& root) {
  Fd old_root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!old_root.valid()) return Errno("open /");
  if (::fchdir(new_root) != 0) return Errno("chdir " + root);
  // pivot_root(".", "."): the old root ends up stacked on the new one, and
  // is detached right away.
  if (::syscall(SYS_pivot_root, ".", ".") != 0) {
    return Errno("pivot_root into " + root);
  }
  if (::fchdir(old_root.get()) != 0) return Errno("chdir to the old root");
  if (::umount2(".", MNT_DETACH) != 0) return Errno("detach the old root");
  if (::chdir("/") != 0) return Errno("chdir / in " + root);
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> KernelMountsUnder(absl::string_view mountinfo,
                                           absl::string_view root) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n')) {
    // id parent major:minor root mount-point options [optional...] - type
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || dash + 1 == fields.end() ||
        !IsKernelFs(*(dash + 1))) {
      continue;
    }
    std::string point = Unescape(fields[4]);
    if (point == root) {
      out.push_back("/");
    } else if (absl::StartsWith(point, root) && point.size() > root.size() &&
               point[root.size()] == '/') {
      out.push_back(point.substr(root.size()));
    }
  }
  return out;
}

absl::Status EnterContainerRoot(const std::string& root) {
  if (::unshare(CLONE_NEWNS) != 0) return Errno("unshare(CLONE_NEWNS)");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Errno("make the mount namespace private");
  }
  // pivot_root needs a mount point; the container's own mounts come along.
  if (::mount(root.c_str(), root.c_str(), nullptr, MS_BIND | MS_REC, nullptr) !=
      0) {
    return Errno("bind-mount " + root + " onto itself");
  }
  Fd new_root(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!new_root.valid()) return Errno("open " + root);
  absl::StatusOr<std::string> canonical = PathOf(new_root.get(), root);
  if (!canonical.ok()) return canonical.status();
  // Read through the runtime side's /proc, before it is out of reach.
  absl::StatusOr<std::string> mountinfo =
      common::ReadFile("/proc/self/mountinfo");
  if (!mountinfo.ok()) return mountinfo.status();
  std::vector<std::string> kernel_mounts =
      KernelMountsUnder(*mountinfo, *canonical);
  if (absl::Status s = PivotInto(new_root.get(), root); !s.ok()) return s;
  // Parents first: a mount below a detached one is gone with it, and one
  // that is not a mount point any more (inside a procfs still there) could
  // not be detached.
  std::stable_sort(kernel_mounts.begin(), kernel_mounts.end(),
                   [](const std::string& a, const std::string& b) {
                     return a.size() < b.size();
                   });
  for (const std::string& path : kernel_mounts) {
    if (absl::Status s = DetachKernelMounts(path, root); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status DropPrivileges() {
  for (int cap = 0; ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; ++cap) {
    if (cap == CAP_DAC_OVERRIDE) continue;
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      return Errno(
          absl::StrCat("drop capability ", cap, " from the bounding set"));
    }
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 &&
      errno != EINVAL) {
    return Errno("clear the ambient capabilities");
  }
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return Errno("capget");
  const unsigned keep = 1u << CAP_DAC_OVERRIDE;  // CAP_DAC_OVERRIDE < 32
  data[0].effective &= keep;
  data[0].permitted &= keep;
  data[0].inheritable = 0;
  for (int i = 1; i < _LINUX_CAPABILITY_U32S_3; ++i) data[i] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return Errno("capset");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return Errno("set no_new_privs");
  }
  return absl::OkStatus();
}

}  // namespace gpulet::runtime
