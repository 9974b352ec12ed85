// DaemonProcess: `gpulet plugin` (or `gpulet dra`) running as a child process
// for the daemon integration tests: started against the NVML simulator,
// signalled, waited for with a deadline, and observed through /proc (open fds,
// threads, CPU time). Its stdout and stderr go to a log file in the test's
// directory.
//
// Ownership: owns the child; the destructor kills (SIGKILL) and reaps it if
// it is still running. Thread safety: none; one test thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace gpulet::testing {

class DaemonProcess {
 public:
  // Runs `gpulet --nvml-lib <sim> --sysfs-root <none> <command> <args...>`
  // with GPULET_SIM_MACHINE=machine and `env` ("NAME=value") added;
  // `command` is "plugin" or "dra".
  DaemonProcess(const std::string& machine,
                const std::vector<std::string>& args,
                const std::string& log_path,
                const std::vector<std::string>& env = {},
                const std::string& command = "plugin");
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }
  void Signal(int signo) const;
  // The exit code (-1 if killed by a signal), or nullopt if still running
  // at the deadline.
  std::optional<int> WaitExit(absl::Duration timeout);
  bool Running();

  std::string Log() const;
  // Polls the log until it contains `text`.
  bool WaitForLog(const std::string& text, absl::Duration timeout) const;

  int OpenFds() const;    // entries in /proc/<pid>/fd
  int Threads() const;    // Threads: in /proc/<pid>/status
  long CpuTicks() const;  // utime + stime from /proc/<pid>/stat

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string log_path_;
};

}  // namespace gpulet::testing
