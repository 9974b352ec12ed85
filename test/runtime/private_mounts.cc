#include "test/runtime/private_mounts.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace gpulet::testing {
namespace {

namespace fs = std::filesystem;

// FNV-1a of the file's bytes.
std::string HashOf(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return absl::StrCat("unreadable:", std::strerror(errno));
  uint64_t hash = 1469598103934665603ull;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      hash = (hash ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
    }
  }
  ::close(fd);
  return absl::StrCat(absl::Hex(hash, absl::kZeroPad16));
}

std::string Describe(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return "gone";
  std::string kind = S_ISREG(st.st_mode)   ? "file"
                     : S_ISDIR(st.st_mode) ? "dir"
                     : S_ISLNK(st.st_mode) ? "link"
                     : S_ISCHR(st.st_mode) ? "chr"
                                           : "other";
  std::string what;
  if (S_ISREG(st.st_mode)) what = HashOf(path);
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    what = fs::read_symlink(path, ec).string();
  }
  if (S_ISCHR(st.st_mode)) what = absl::StrCat(st.st_rdev);  // whiteouts
  return absl::StrCat(kind, " ", absl::Hex(st.st_mode & 07777), " ",
                      S_ISDIR(st.st_mode) ? 0 : st.st_size, " ", what);
}

void Write(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0 && errno != EINTR) return;
    if (n > 0) done += static_cast<size_t>(n);
  }
}

// In the child: the namespace and the overlays, or why not.
std::string SetUp(const std::string& scratch,
                  std::vector<std::string>& uppers) {
  if (::unshare(CLONE_NEWNS) != 0) return "unshare(CLONE_NEWNS) failed";
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return "making / private failed";
  }
  const std::string base = scratch + "/overlay";
  ::mkdir(base.c_str(), 0700);
  if (::mount("tmpfs", base.c_str(), "tmpfs", 0, "mode=0700") != 0) {
    return "mounting a tmpfs on " + base + " failed";
  }
  std::vector<std::string> dirs = OverlaidDirs();
  for (size_t i = 0; i < dirs.size(); ++i) {
    const std::string layer = absl::StrCat(base, "/", i);
    for (const char* sub : {"", "/upper", "/work"}) {
      ::mkdir((layer + sub).c_str(), 0755);
    }
    const std::string options =
        absl::StrCat("lowerdir=", dirs[i], ",upperdir=", layer,
                     "/upper,workdir=", layer, "/work");
    if (::mount("overlay", dirs[i].c_str(), "overlay", 0, options.c_str()) !=
        0) {
      return absl::StrCat("overlay on ", dirs[i],
                          " failed: ", std::strerror(errno));
    }
    uppers.push_back(layer + "/upper");
  }
  return "";
}

}  // namespace

std::vector<std::string> OverlaidDirs() {
  std::vector<std::string> dirs = {"/etc", "/usr/lib"};
  struct stat st;
  if (::lstat("/lib", &st) == 0 && S_ISDIR(st.st_mode)) dirs.push_back("/lib");
  return dirs;
}

PrivateMountsResult InPrivateMounts(
    const std::string& scratch,
    const std::function<std::string(const std::vector<std::string>&)>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {false, "pipe failed"};
  pid_t pid = ::fork();
  if (pid < 0) return {false, "fork failed"};
  if (pid == 0) {
    ::close(fds[0]);
    std::vector<std::string> uppers;
    std::string failed = SetUp(scratch, uppers);
    if (!failed.empty()) {
      Write(fds[1], "F" + failed);
      ::_exit(1);
    }
    Write(fds[1], "R" + body(uppers));
    for (const std::string& dir : OverlaidDirs()) {
      ::umount2(dir.c_str(), MNT_DETACH);
    }
    ::umount2((scratch + "/overlay").c_str(), MNT_DETACH);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (out.empty()) return {false, "the child died before it reported"};
  return {out[0] == 'R', out.substr(1)};
}

TreeSnapshot Snapshot(const std::string& root) {
  TreeSnapshot out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string path = it->path().string();
    out[path.substr(root.size())] = Describe(path);
  }
  return out;
}

std::string Differences(const std::string& where, const TreeSnapshot& before,
                        const TreeSnapshot& after) {
  std::string out;
  for (const auto& [path, was] : before) {
    auto it = after.find(path);
    if (it == after.end()) {
      absl::StrAppend(&out, where, path, ": removed (was ", was, ")\n");
    } else if (it->second != was) {
      absl::StrAppend(&out, where, path, ": ", was, " -> ", it->second, "\n");
    }
  }
  for (const auto& [path, now] : after) {
    if (!before.contains(path)) {
      absl::StrAppend(&out, where, path, ": added (", now, ")\n");
    }
  }
  return out;
}

}  // namespace gpulet::testing
