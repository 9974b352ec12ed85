// RunChild: runs a program to its end and collects its standard output,
// with bounds. The program gets exactly the argv and environment given (no
// PATH search, no inherited environment: the caller decides both), its
// standard input from a given descriptor or /dev/null, its standard error
// on a given descriptor (the caller's by default), and no signal blocked
// or ignored (a caller may block its signals for a signalfd; exec would
// keep that). It gets SIGKILL if the calling thread ends first
// (PR_SET_PDEATHSIG).
//
// Bounds: standard output is read up to `max_output` bytes and the whole
// run up to `deadline` (on the monotonic clock). Past either the child is
// killed (its process group too when it has one of its own) and reaped
// before RunChild returns: a child never outlives the call.
//
// Errors: the exec failing comes back as the errno Status ("execute
// <argv[0]>: No such file or directory" is NotFound); a deadline passing
// is DeadlineExceeded, too much output ResourceExhausted, both naming
// argv[0]. A program that ran and ended, however it ended, is OK with its
// wait status in the result.
//
// Thread safety: pure function; may be called from any thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gpulet::common {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0]: the path executed, as is
  std::vector<std::string> env;   // "NAME=value", the whole environment
  int stdin_fd = -1;              // -1: /dev/null
  int stderr_fd = 2;
  // A process group of its own, killed as a whole at a bound. Leave it off
  // for a child that reads the terminal (a background group may not).
  bool own_process_group = false;
};

struct ChildResult {
  pid_t pid = -1;
  int wait_status = 0;  // as waitpid reports it
  std::string output;   // standard output
};

absl::StatusOr<ChildResult> RunChild(const ChildSpec& spec, size_t max_output,
                                     absl::Time deadline);

// How a wait status reads: "exit status 1", "killed by signal 9".
std::string DescribeWaitStatus(int wait_status);

// True when the wait status is a normal exit with status 0.
bool ExitedCleanly(int wait_status);

}  // namespace gpulet::common
