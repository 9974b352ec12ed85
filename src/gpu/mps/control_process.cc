#include "src/gpu/mps/control_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/common/clock.h"
#include "src/base/common/errors.h"
#include "src/base/common/poll_timeout.h"
#include "src/gpu/mps/mps_paths.h"

extern char** environ;

namespace gpulet::mps {
namespace {

struct Child {
  pid_t pid = -1;
  common::UniqueFd pidfd;
};

// What a child that failed before execve reports through its error pipe.
struct ChildError {
  int step = 0;  // index into kChildSteps
  int err = 0;
};
constexpr const char* kChildSteps[] = {
    "unshare(CLONE_NEWNS) (needs CAP_SYS_ADMIN)",
    "make its mounts slaves of gpulet's",
    "bind the shm directory over /dev/shm", "execve"};

// In the child, before execve: a mount namespace of its own with `shm_dir`
// over /dev/shm. Only async-signal-safe calls. Returns the failed step or
// -1.
int EnterShmNamespace(const char* shm_dir) {
  if (::unshare(CLONE_NEWNS) != 0) return 0;
  // Else the bind would propagate back into gpulet's namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    return 1;
  }
  if (::mount(shm_dir, "/dev/shm", nullptr, MS_BIND, nullptr) != 0) return 2;
  return -1;
}

// In the parent: OK once the child's execve closed the error pipe; the
// child's report (and the child reaped) when it failed before.
absl::Status AwaitExec(int error_read, pid_t pid, const std::string& binary,
                       const std::string& shm_dir) {
  ChildError failed;
  ssize_t n;
  do {
    n = ::read(error_read, &failed, sizeof(failed));
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(failed))) return absl::OkStatus();
  ::waitpid(pid, nullptr, 0);
  const bool namespace_step = !shm_dir.empty() && failed.step < 3;
  return common::ErrnoToStatus(
      failed.err,
      absl::StrCat(binary, ": ", kChildSteps[failed.step],
                   namespace_step ? absl::StrCat(" for ", shm_dir) : ""));
}

// fork + execve with `stdin_fd` (or /dev/null) as standard input, and with
// `shm_dir` (when not empty) over its /dev/shm. The child starts with no
// signal blocked and SIGPIPE at its default (gpulet blocks its signals for
// signalfd and may ignore SIGPIPE; exec would keep both). A failure before
// or at execve comes back through a close-on-exec pipe as an error.
absl::StatusOr<Child> Spawn(std::vector<std::string> argv,
                            std::vector<std::string> env, int stdin_fd,
                            const std::string& shm_dir = "") {
  std::vector<char*> av;
  for (std::string& a : argv) av.push_back(a.data());
  av.push_back(nullptr);
  std::vector<char*> ev;
  for (std::string& e : env) ev.push_back(e.data());
  ev.push_back(nullptr);
  common::UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull.valid()) return common::ErrnoToStatus(errno, "open /dev/null");
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) {
    return common::ErrnoToStatus(errno, "pipe for " + argv[0]);
  }
  common::UniqueFd error_read(error_pipe[0]);
  common::UniqueFd error_write(error_pipe[1]);
  const int in = stdin_fd >= 0 ? stdin_fd : devnull.get();
  const char* shm = shm_dir.empty() ? nullptr : shm_dir.c_str();
  const pid_t pid = ::fork();
  if (pid < 0) return common::ErrnoToStatus(errno, "fork for " + argv[0]);
  if (pid == 0) {
    // Only async-signal-safe calls until execve.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (in != 0) ::dup2(in, 0);
    ChildError failed;
    failed.step = shm != nullptr ? EnterShmNamespace(shm) : -1;
    if (failed.step < 0) {
      ::execve(av[0], av.data(), ev.data());
      failed.step = 3;
    }
    failed.err = errno;
    (void)!::write(error_write.get(), &failed, sizeof(failed));
    ::_exit(127);
  }
  error_write.Reset();
  if (absl::Status s = AwaitExec(error_read.get(), pid, argv[0], shm_dir);
      !s.ok()) {
    return s;
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const int err = errno;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return common::ErrnoToStatus(err, "pidfd_open for " + argv[0]);
  }
  return Child{pid, common::UniqueFd(pidfd)};
}

// Waits up to `timeout` for the process behind `pidfd` to exit.
bool WaitExit(int pidfd, absl::Duration timeout) {
  const common::Clock& clock = common::RealClock::Get();
  const absl::Time deadline = clock.Now() + timeout;
  while (true) {
    pollfd p{pidfd, POLLIN, 0};
    const int rc = ::poll(&p, 1, common::PollTimeoutUntil(deadline, clock));
    if (rc > 0) return true;
    if (rc == 0 && clock.Now() >= deadline) return false;
    if (rc == 0) continue;
    if (errno != EINTR) return false;
  }
}

std::string How(int status) {
  if (WIFEXITED(status)) {
    return absl::StrCat("exit status ", WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(status));
  }
  return absl::StrCat("wait status ", status);
}

std::string Reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return "not reaped";
  }
  return How(status);
}

absl::Status MakeDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("create MPS directory ", dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

// Like the node's /dev/shm: any client UID creates its segments there, and
// only the owner removes them (the sticky bit). A symlink planted in its
// place is refused rather than followed.
absl::Status MakeShmDir(const std::string& dir) {
  if (absl::Status s = MakeDir(dir); !s.ok()) return s;
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    return common::ErrnoToStatus(errno, "stat MPS directory " + dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("MPS directory ", dir, " is not a directory"));
  }
  if ((st.st_mode & 07777) != 01777 && ::chmod(dir.c_str(), 01777) != 0) {
    return common::ErrnoToStatus(errno, "chmod MPS directory " + dir);
  }
  return absl::OkStatus();
}

std::vector<std::string> ProcessEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    env.emplace_back(*e);
  }
  return env;
}

}  // namespace

std::vector<std::string> DaemonEnvironment(const std::vector<std::string>& base,
                                           const DaemonSpec& spec) {
  std::vector<std::string> env;
  for (const std::string& e : base) {
    if (absl::StartsWith(e, "CUDA_VISIBLE_DEVICES=") ||
        absl::StartsWith(e, "CUDA_MPS_")) {
      continue;
    }
    env.push_back(e);
  }
  env.push_back(absl::StrCat("CUDA_VISIBLE_DEVICES=", spec.uuid));
  env.push_back(
      absl::StrCat(sharing::kMpsPipeDirectoryEnv, "=", spec.pipe_dir));
  env.push_back(absl::StrCat(sharing::kMpsLogDirectoryEnv, "=", spec.log_dir));
  return env;
}

absl::Status RunTool(const std::vector<std::string>& argv,
                     absl::Duration timeout) {
  absl::StatusOr<Child> child = Spawn(argv, ProcessEnvironment(), -1);
  if (!child.ok()) return child.status();
  const bool ended = WaitExit(child->pidfd.get(), timeout);
  if (!ended) ::kill(child->pid, SIGKILL);
  const std::string how = Reap(child->pid);
  if (ended && how == "exit status 0") return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(absl::StrJoin(argv, " "), ": ", how,
                   ended ? ""
                         : absl::StrCat(" (killed after ",
                                        absl::FormatDuration(timeout), ")")));
}

absl::StatusOr<std::unique_ptr<ControlProcess>> ControlProcess::Start(
    const DaemonSpec& spec) {
  if (absl::Status s = MakeDir(spec.pipe_dir); !s.ok()) return s;
  if (absl::Status s = MakeDir(spec.log_dir); !s.ok()) return s;
  if (!spec.shm_dir.empty()) {
    if (absl::Status s = MakeShmDir(spec.shm_dir); !s.ok()) return s;
  }
  const std::string control =
      absl::StrCat(spec.pipe_dir, "/", sharing::kMpsControlSocket);
  if (::unlink(control.c_str()) != 0 && errno != ENOENT) {
    return common::ErrnoToStatus(errno, "remove stale " + control);
  }
  absl::StatusOr<Child> child =
      Spawn({spec.binary, "-f"}, DaemonEnvironment(ProcessEnvironment(), spec),
            -1, spec.shm_dir);
  if (!child.ok()) return child.status();
  return std::unique_ptr<ControlProcess>(
      new ControlProcess(spec, child->pid, std::move(child->pidfd)));
}

ControlProcess::~ControlProcess() {
  if (pid_ < 0) return;
  ::kill(pid_, SIGKILL);
  Reap(pid_);
}

bool ControlProcess::Ready() const {
  struct stat st;
  const std::string control =
      absl::StrCat(spec_.pipe_dir, "/", sharing::kMpsControlSocket);
  return pid_ >= 0 && ::stat(control.c_str(), &st) == 0;
}

absl::Status ControlProcess::AwaitReady(absl::Duration timeout) {
  common::UniqueFd watch(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (!watch.valid()) return common::ErrnoToStatus(errno, "inotify_init1");
  if (::inotify_add_watch(watch.get(), spec_.pipe_dir.c_str(),
                          IN_CREATE | IN_MOVED_TO) < 0) {
    return common::ErrnoToStatus(errno, "watch " + spec_.pipe_dir);
  }
  const common::Clock& clock = common::RealClock::Get();
  const absl::Time deadline = clock.Now() + timeout;
  while (!Ready()) {
    std::string how;
    if (Exited(&how)) {
      return absl::FailedPreconditionError(
          absl::StrCat("the MPS control daemon of ", spec_.uuid,
                       " ended before it listened (", how, ")"));
    }
    if (clock.Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("the MPS control daemon of ", spec_.uuid,
                       " made no control socket in ", spec_.pipe_dir,
                       " within ", absl::FormatDuration(timeout)));
    }
    pollfd fds[2] = {{watch.get(), POLLIN, 0}, {pidfd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, common::PollTimeoutUntil(deadline, clock)) > 0 &&
        fds[0].revents != 0) {
      char buf[4096];
      while (::read(watch.get(), buf, sizeof(buf)) > 0) {
      }
    }
  }
  return absl::OkStatus();
}

bool ControlProcess::Exited(std::string* how) {
  if (pid_ < 0) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return false;
  *how = r < 0 ? "not reaped" : How(status);
  pid_ = -1;
  return true;
}

absl::Status ControlProcess::Send(const std::vector<std::string>& commands,
                                  absl::Duration timeout) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return common::ErrnoToStatus(errno, "socketpair for " + spec_.binary);
  }
  common::UniqueFd read_end(fds[0]);
  common::UniqueFd write_end(fds[1]);
  absl::StatusOr<Child> client =
      Spawn({spec_.binary}, DaemonEnvironment(ProcessEnvironment(), spec_),
            read_end.get());
  if (!client.ok()) return client.status();
  read_end.Reset();
  // A few short lines: far below a socket's buffer, so the send never
  // blocks on a control program that does not read, and MSG_NOSIGNAL
  // keeps one that exited from raising SIGPIPE here.
  const std::string input = absl::StrCat(absl::StrJoin(commands, "\n"), "\n");
  const bool written =
      ::send(write_end.get(), input.data(), input.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(input.size());
  ::shutdown(write_end.get(), SHUT_WR);
  write_end.Reset();
  const bool ended = WaitExit(client->pidfd.get(), timeout);
  if (!ended) ::kill(client->pid, SIGKILL);
  const std::string how = Reap(client->pid);
  if (written && ended && how == "exit status 0") return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      "send \"", absl::StrJoin(commands, "; "),
      "\" to the MPS control daemon of ", spec_.uuid, ": ", spec_.binary, " ",
      !written ? "did not take its input"
      : ended
          ? how
          : absl::StrCat("was killed after ", absl::FormatDuration(timeout))));
}

absl::StatusOr<std::string> ControlProcess::Stop(absl::Duration grace) {
  std::string how;
  if (Exited(&how)) return how;
  int fds[2];
  std::optional<Child> client;
  if (!Ready()) {
    // Not listening yet, so the control program could not reach it.
    ::kill(pid_, SIGTERM);
  } else if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0) {
    common::UniqueFd ours(fds[0]);
    common::UniqueFd theirs(fds[1]);
    absl::StatusOr<Child> c =
        Spawn({spec_.binary}, DaemonEnvironment(ProcessEnvironment(), spec_),
              theirs.get());
    if (c.ok()) {
      client = *std::move(c);
      constexpr char kQuit[] = "quit\n";
      ::send(ours.get(), kQuit, sizeof(kQuit) - 1, MSG_NOSIGNAL);
    }
  }
  const common::Clock& clock = common::RealClock::Get();
  const absl::Time deadline = clock.Now() + grace;
  const bool quit = WaitExit(pidfd_.get(), grace);
  if (!quit) ::kill(pid_, SIGKILL);
  how = Reap(pid_);
  pid_ = -1;
  if (client.has_value()) {
    if (!WaitExit(client->pidfd.get(),
                  std::max(deadline - clock.Now(), absl::ZeroDuration()))) {
      ::kill(client->pid, SIGKILL);
    }
    Reap(client->pid);
  }
  if (!quit) {
    return absl::DeadlineExceededError(absl::StrCat(
        "the MPS control daemon of ", spec_.uuid, " did not quit within ",
        absl::FormatDuration(grace), "; killed (", how, ")"));
  }
  return how;
}

}  // namespace gpulet::mps
