#include "src/base/common/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/errors.h"
#include "src/base/common/poll_timeout.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::common {
namespace {

// The child's side, between fork and execve: only async-signal-safe calls.
// Reports errno through `error_fd` when execve fails.
[[noreturn]] void ExecChild(char* const* argv, char* const* envp, int in,
                            int out, int err, bool own_group, int error_fd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (own_group) ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  // Descriptors 0-2 are set in an order that survives one of them being
  // another's source.
  const int err_copy = err == 2 ? 2 : ::fcntl(err, F_DUPFD_CLOEXEC, 3);
  if (in != 0) ::dup2(in, 0);
  if (out != 1) ::dup2(out, 1);
  if (err_copy != 2 && err_copy >= 0) ::dup2(err_copy, 2);
  ::execve(argv[0], argv, envp);
  const int e = errno;
  (void)!::write(error_fd, &e, sizeof(e));
  ::_exit(127);
}

// Waits for `fd` to be readable until `deadline`: false when it passed.
bool WaitReadable(int fd, absl::Time deadline, const Clock& clock) {
  while (true) {
    pollfd p{fd, POLLIN, 0};
    const int rc =
        ::poll(&p, 1, PollTimeoutUntil(deadline, clock, absl::Seconds(60)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return true;  // let the read report it
    if (rc == 0 && clock.Now() >= deadline) return false;
  }
}

int Reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

void KillAndReap(pid_t pid, bool group) {
  if (group) ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  Reap(pid);
}

// Reads the child's output until EOF, the bound or the deadline. OK with
// the output; the Status names what went wrong otherwise.
absl::Status ReadOutput(int fd, size_t max_output, absl::Time deadline,
                        const std::string& name, std::string& output) {
  const Clock& clock = RealClock::Get();
  char buffer[16 << 10];
  while (true) {
    if (!WaitReadable(fd, deadline, clock)) {
      return absl::DeadlineExceededError(
          absl::StrCat(name, ": did not finish in time; killed"));
    }
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "read the output of " + name);
    if (n == 0) return absl::OkStatus();
    if (output.size() + static_cast<size_t>(n) > max_output) {
      return absl::ResourceExhaustedError(absl::StrCat(
          name, ": wrote more than ", max_output, " bytes; killed"));
    }
    output.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

absl::StatusOr<ChildResult> RunChild(const ChildSpec& spec, size_t max_output,
                                     absl::Time deadline) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("empty argv");
  const std::string& name = spec.argv[0];
  std::vector<std::string> argv = spec.argv, env = spec.env;
  std::vector<char*> av, ev;
  for (std::string& a : argv) av.push_back(a.data());
  av.push_back(nullptr);
  for (std::string& e : env) ev.push_back(e.data());
  ev.push_back(nullptr);
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull.valid()) return ErrnoToStatus(errno, "open /dev/null");
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe");
  UniqueFd out_read(p[0]), out_write(p[1]);
  if (::pipe2(p, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe");
  UniqueFd error_read(p[0]), error_write(p[1]);
  const int in = spec.stdin_fd >= 0 ? spec.stdin_fd : devnull.get();

  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoToStatus(errno, "fork for " + name);
  if (pid == 0) {
    ExecChild(av.data(), ev.data(), in, out_write.get(), spec.stderr_fd,
              spec.own_process_group, error_write.get());
  }
  out_write.Reset();
  error_write.Reset();
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(error_read.get(), &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    Reap(pid);
    return ErrnoToStatus(exec_errno, "execute " + name);
  }
  ChildResult result;
  result.pid = pid;
  absl::Status read =
      ReadOutput(out_read.get(), max_output, deadline, name, result.output);
  if (!read.ok()) {
    KillAndReap(pid, spec.own_process_group);
    return read;
  }
  // The output ended; the child may still be running (or a child of its
  // holds nothing more): wait for it within the same deadline.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    UniqueFd owned(pidfd);
    if (!WaitReadable(pidfd, deadline, RealClock::Get())) {
      KillAndReap(pid, spec.own_process_group);
      return absl::DeadlineExceededError(
          absl::StrCat(name, ": did not exit in time; killed"));
    }
  }
  result.wait_status = Reap(pid);
  return result;
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return absl::StrCat("exit status ", WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(wait_status));
  }
  return absl::StrCat("wait status ", wait_status);
}

bool ExitedCleanly(int wait_status) {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

}  // namespace gpulet::common
