// Running binaries under test as child processes: capture stdout, stderr
// and the exit status, with a controlled environment. For integration tests
// only (blocking, no timeouts beyond what the child does itself).
//
// Ownership: ChildProcess owns its pid and pipe fds; the destructor closes
// stdin (the child's cue to exit), then waits for it.
// Thread safety: none; one test thread.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpulet::testing {

struct Environment {
  std::map<std::string, std::string> set;  // added or replaced
  std::vector<std::string> unset;          // removed
};

struct ProcessResult {
  int exit_code = -1;   // -1 when killed by a signal
  int term_signal = 0;  // the signal, when killed by one
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with the current environment modified by `env`,
// stdin from /dev/null, and waits for it.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const Environment& env = {});

// A long-running child with pipes on stdin and stdout (stderr inherited).
class ChildProcess {
 public:
  static std::optional<ChildProcess> Start(const std::vector<std::string>& argv,
                                           const Environment& env);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  // One line from the child's stdout without the newline; nullopt on EOF.
  std::optional<std::string> ReadLine();
  // Closes the child's stdin and waits; the exit code (-1 if signalled).
  int Finish();

 private:
  ChildProcess(pid_t pid, int stdin_fd, int stdout_fd)
      : pid_(pid), stdin_fd_(stdin_fd), stdout_fd_(stdout_fd) {}

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
};

}  // namespace gpulet::testing
