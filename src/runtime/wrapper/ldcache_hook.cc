#include "src/runtime/wrapper/ldcache_hook.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/base/common/logging.h"
#include "src/base/common/unique_fd.h"
#include "src/model/cdi/spec_builder.h"
#include "src/runtime/wrapper/ldcache_jail.h"
#include "src/runtime/wrapper/oci_config.h"
#include "src/runtime/wrapper/static_elf.h"

namespace gpulet::runtime {
namespace {

using nlohmann::json;
using Fd = common::UniqueFd;

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// What the confined child needs, all prepared before the fork.
struct Job {
  std::string root;
  int ldconfig_fd = -1;
  std::vector<std::string> argv;
  std::vector<std::string> folders;
};

absl::Status StdinFromDevNull() {
  Fd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null.valid()) return common::ErrnoToStatus(errno, "open /dev/null");
  if (::dup2(null.get(), 0) < 0) {
    return common::ErrnoToStatus(errno, "dup2 /dev/null");
  }
  return absl::OkStatus();
}

// Every descriptor but stdin/out/err (ldconfig's messages reach the
// hook's stderr, which runc shows) is closed when ldconfig starts.
void CloseInheritedFds() {
  if (::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) == 0) return;
  // Kernels before 5.11.
  struct rlimit limit;
  int max = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 1u << 20
                ? static_cast<int>(limit.rlim_cur)
                : 1 << 20;
  for (int fd = 3; fd < max; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

// In the child: only returns on failure.
absl::Status ConfineAndExec(const Job& job) {
  if (absl::Status s = StdinFromDevNull(); !s.ok()) return s;
  if (absl::Status s = EnterContainerRoot(job.root); !s.ok()) return s;
  if (absl::Status s = DropPrivileges(); !s.ok()) return s;
  Fd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return common::ErrnoToStatus(errno, "open " + job.root);
  if (absl::Status s = WriteLdSoConf(root.get(), job.root, job.folders);
      !s.ok()) {
    return s;
  }
  CloseInheritedFds();
  std::vector<char*> argv;
  for (const std::string& arg : job.argv) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  // Never the hook's environ.
  char* envp[] = {const_cast<char*>(cdi::kHookEnv), nullptr};
  ::syscall(SYS_execveat, job.ldconfig_fd, "", argv.data(), envp,
            AT_EMPTY_PATH);
  return common::ErrnoToStatus(errno, absl::StrCat("execute ", job.argv[0]));
}

[[noreturn]] void Child(const Job& job, pid_t parent, int error_fd) {
  // runc kills the hook at its timeout; ldconfig must not outlive it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != parent) ::_exit(1);
  absl::Status status = ConfineAndExec(job);
  std::string message(status.message());
  ssize_t ignored = ::write(error_fd, message.data(), message.size());
  (void)ignored;
  ::_exit(1);
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

absl::Status RunConfined(const Job& job) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return common::ErrnoToStatus(errno, "pipe");
  }
  Fd read_end(pipe_fds[0]);
  Fd write_end(pipe_fds[1]);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return common::ErrnoToStatus(errno, "fork");
  if (pid == 0) Child(job, parent, write_end.get());
  write_end.Reset();
  // EOF once ldconfig has started (the pipe is close-on-exec) or the child
  // has written why it could not.
  const std::string failure = ReadAll(read_end.get());
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return common::ErrnoToStatus(errno, "waitpid");
  }
  const std::string where = absl::StrCat("update-ldcache in ", job.root, ": ");
  if (!failure.empty()) return absl::InternalError(where + failure);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(
        where, absl::StrJoin(job.argv, " "), ": ",
        WIFEXITED(status) ? absl::StrCat("exit status ", WEXITSTATUS(status))
                          : absl::StrCat("signal ", WTERMSIG(status))));
  }
  return absl::OkStatus();
}

// Opens the file at `name` under `dir` for writing without following a
// symlink, blocking on a FIFO or opening a device: only a regular file (or
// none) will do.
absl::StatusOr<Fd> OpenRegularForWrite(int dir, const char* name,
                                       const std::string& shown) {
  struct stat st;
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(shown, " exists and is not a regular file"));
  }
  Fd file(::openat(dir, name,
                   O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                   0644));
  if (!file.valid()) return common::ErrnoToStatus(errno, "create " + shown);
  if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(shown, " is not a regular file"));
  }
  if (::ftruncate(file.get(), 0) != 0) {
    return common::ErrnoToStatus(errno, "truncate " + shown);
  }
  return file;
}

}  // namespace

absl::StatusOr<std::string> ContainerRootFromState(
    absl::string_view state_json) {
  json state;
  try {
    state = json::parse(state_json.begin(), state_json.end());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("container state on stdin: ", e.what()));
  }
  if (!state.is_object() || !state.contains("bundle") ||
      !state["bundle"].is_string()) {
    return absl::InvalidArgumentError(
        "container state on stdin: bundle missing or not a string");
  }
  const std::string bundle = state["bundle"].get<std::string>();
  const std::string path = absl::StrCat(bundle, "/config.json");
  absl::StatusOr<std::string> text = common::ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<json> config = ParseOciConfig(*text, path);
  if (!config.ok()) return config.status();
  std::string root = (*config)["root"]["path"].get<std::string>();
  if (root[0] != '/') root = absl::StrCat(bundle, "/", root);
  if (root == "/" || !IsDir(root)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": root.path ", root, " is not a container root"));
  }
  return root;
}

absl::Status WriteLdSoConf(int root_fd, const std::string& root_name,
                           const std::vector<std::string>& folders) {
  if (::mkdirat(root_fd, "etc", 0755) != 0 && errno != EEXIST) {
    return common::ErrnoToStatus(errno,
                                 absl::StrCat("mkdir ", root_name, "/etc"));
  }
  if (folders.empty()) return absl::OkStatus();
  Fd etc(::openat(root_fd, "etc", O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!etc.valid()) return absl::OkStatus();  // a symlink: leave it alone
  Fd conf_dir(::openat(etc.get(), "ld.so.conf.d",
                       O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!conf_dir.valid()) return absl::OkStatus();  // none, or a symlink
  const char* name = kLdSoConfFile + sizeof("/etc/ld.so.conf.d/") - 1;
  absl::StatusOr<Fd> file = OpenRegularForWrite(
      conf_dir.get(), name, absl::StrCat(root_name, kLdSoConfFile));
  if (!file.ok()) return file.status();
  return common::WriteAll(file->get(),
                          absl::StrCat(absl::StrJoin(folders, "\n"), "\n"),
                          absl::StrCat(root_name, kLdSoConfFile));
}

absl::Status UpdateLdCache(absl::string_view state_json,
                           const std::vector<std::string>& folders,
                           const std::string& ldconfig_path) {
  absl::StatusOr<std::string> root = ContainerRootFromState(state_json);
  if (!root.ok()) return root.status();
  Fd ldconfig(::open(ldconfig_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ldconfig.valid()) {
    const absl::Status why = common::ErrnoToStatus(errno, "open");
    GPULET_LOG(WARNING) << "update-ldcache: no ldconfig at " << ldconfig_path
                        << " (" << why.message()
                        << "); leaving the container's ld cache as it is";
    return absl::OkStatus();
  }
  if (absl::Status s = CheckStaticElf(ldconfig.get(), ldconfig_path); !s.ok()) {
    GPULET_LOG(WARNING) << "update-ldcache: " << s.message()
                        << "; leaving the container's ld cache as it is";
    return absl::OkStatus();
  }
  Job job;
  job.root = *root;
  job.ldconfig_fd = ldconfig.get();
  // The host's ldconfig may default to other files; these are the
  // container's, since its root is the container's.
  job.argv = {"ldconfig", "-f", "/etc/ld.so.conf", "-C", "/etc/ld.so.cache"};
  job.argv.insert(job.argv.end(), folders.begin(), folders.end());
  job.folders = folders;
  return RunConfined(job);
}

}  // namespace gpulet::runtime
