#include "test/integration/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

extern char** environ;

namespace gpulet::testing {
namespace {

std::vector<std::string> BuildEnvironment(const Environment& env) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& name : env.unset) vars.erase(name);
  for (const auto& [name, value] : env.set) vars[name] = value;
  std::vector<std::string> result;
  for (const auto& [name, value] : vars) result.push_back(name + "=" + value);
  return result;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> ptrs;
  for (auto& s : strings) ptrs.push_back(s.data());
  ptrs.push_back(nullptr);
  return ptrs;
}

// Spawns with the given fds as the child's 0, 1, 2 (-1: /dev/null for 0,
// inherit for 1 and 2). Returns the pid or -1.
pid_t Spawn(const std::vector<std::string>& argv, const Environment& env,
            int in_fd, int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (in_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, in_fd, 0);
  } else {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  }
  if (out_fd >= 0) posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  if (err_fd >= 0) posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = BuildEnvironment(env);
  std::vector<char*> arg_ptrs = Pointers(args);
  std::vector<char*> env_ptrs = Pointers(envs);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0].c_str(), &actions, nullptr,
                       arg_ptrs.data(), env_ptrs.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Reads both pipes to EOF without deadlocking on either.
void Drain(int out_fd, int err_fd, std::string& out, std::string& err) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open = 2;
  char buf[4096];
  while (open > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
}

int WaitExit(pid_t pid, int* term_signal) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (term_signal != nullptr && WIFSIGNALED(status)) {
    *term_signal = WTERMSIG(status);
  }
  return -1;
}

}  // namespace

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const Environment& env) {
  ProcessResult result;
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return result;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return result;
  }
  pid_t pid = Spawn(argv, env, -1, out_pipe[1], err_pipe[1]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.err = "spawn failed: " + argv[0];
    return result;
  }
  Drain(out_pipe[0], err_pipe[0], result.out, result.err);
  result.exit_code = WaitExit(pid, &result.term_signal);
  return result;
}

std::optional<ChildProcess> ChildProcess::Start(
    const std::vector<std::string>& argv, const Environment& env) {
  int in_pipe[2];
  int out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return std::nullopt;
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    return std::nullopt;
  }
  pid_t pid = Spawn(argv, env, in_pipe[0], out_pipe[1], -1);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (pid < 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    return std::nullopt;
  }
  return ChildProcess(pid, in_pipe[1], out_pipe[0]);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      stdin_fd_(std::exchange(other.stdin_fd_, -1)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      buffer_(std::move(other.buffer_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Finish();
    pid_ = std::exchange(other.pid_, -1);
    stdin_fd_ = std::exchange(other.stdin_fd_, -1);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

ChildProcess::~ChildProcess() { Finish(); }

std::optional<std::string> ChildProcess::ReadLine() {
  char buf[256];
  while (true) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (stdout_fd_ < 0) return std::nullopt;
    ssize_t n = read(stdout_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

int ChildProcess::Finish() {
  if (stdin_fd_ >= 0) close(std::exchange(stdin_fd_, -1));
  if (stdout_fd_ >= 0) close(std::exchange(stdout_fd_, -1));
  if (pid_ < 0) return -1;
  return WaitExit(std::exchange(pid_, -1), nullptr);
}

}  // namespace gpulet::testing
