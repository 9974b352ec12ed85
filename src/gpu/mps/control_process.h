// ControlProcess: one MPS control daemon, `nvidia-cuda-mps-control -f`,
// run in the foreground as gpulet's child so that gpulet sees it die (its
// pidfd becomes readable) instead of losing it to `-d`'s fork. The daemon
// gets gpulet's environment plus CUDA_VISIBLE_DEVICES=<uuid> and its own
// CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY, so it serves that one
// GPU. Stop() asks it to quit as an operator would (`echo quit |
// nvidia-cuda-mps-control` with the same environment) and kills what is
// left after the grace period.
//
// With a `shm_dir` the daemon runs in a mount namespace of its own (a
// slave of gpulet's) in which that directory is bound over /dev/shm: the
// MPS server it starts and the clients, which get the same directory as
// their /dev/shm, share memory there, and no other daemon's clients do.
// That needs CAP_SYS_ADMIN (and no LSM profile that denies mount); without
// it Start fails naming the capability.
//
// The child gets SIGKILL if the thread that started it ends first
// (PR_SET_PDEATHSIG), so a gpulet that dies leaves no daemon behind.
//
// Thread safety: none; one owner thread (the supervisor's).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::mps {

struct DaemonSpec {
  std::string binary;  // host path of nvidia-cuda-mps-control
  std::string uuid;    // CUDA_VISIBLE_DEVICES
  std::string pipe_dir;
  std::string log_dir;
  // Bound over the daemon's /dev/shm; empty: gpulet's own /dev/shm.
  std::string shm_dir = "";
};

class ControlProcess {
 public:
  // Creates the pipe and log directories (and the shm directory, mode
  // 01777 like a /dev/shm, keeping what it holds), removes a control socket
  // left by a daemon that died, and starts the daemon. An error names the
  // binary or the directory.
  static absl::StatusOr<std::unique_ptr<ControlProcess>> Start(
      const DaemonSpec& spec);
  // Kills the daemon if it still runs, and reaps it.
  ~ControlProcess();

  ControlProcess(const ControlProcess&) = delete;
  ControlProcess& operator=(const ControlProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Readable once the daemon has exited.
  int pidfd() const { return pidfd_.get(); }
  // Whether the daemon's control socket is in its pipe directory.
  bool Ready() const;
  // Waits up to `timeout` for the control socket (inotify on the pipe
  // directory, and the daemon's pidfd). FailedPrecondition saying how the
  // daemon ended when it exits first (it is then reaped), DeadlineExceeded
  // when the time runs out.
  absl::Status AwaitReady(absl::Duration timeout);
  // Reaps the daemon when it has exited: true, with how it ended ("exit
  // status 1", "killed by signal 9") in `how`. False while it runs.
  bool Exited(std::string* how);
  // Sends `commands`, one a line, through the control program (`printf
  // '%s\n' ... | nvidia-cuda-mps-control` with the daemon's environment)
  // and waits up to `timeout` for it to end. OK when it exited with status
  // 0; otherwise an error naming the daemon's GPU and how the program ended.
  // REQUIRES: Ready().
  absl::Status Send(const std::vector<std::string>& commands,
                    absl::Duration timeout);
  // Sends `quit` through the control program (SIGTERM instead before the
  // daemon is Ready), waits up to `grace` for the daemon to exit, then
  // kills it (and the control program). Returns how it ended; an error
  // when it had to be killed.
  absl::StatusOr<std::string> Stop(absl::Duration grace);

 private:
  ControlProcess(DaemonSpec spec, pid_t pid, common::UniqueFd pidfd)
      : spec_(std::move(spec)), pid_(pid), pidfd_(std::move(pidfd)) {}

  const DaemonSpec spec_;
  pid_t pid_ = -1;  // -1 once reaped
  common::UniqueFd pidfd_;
};

// Runs a driver tool (`argv[0]` a path) with gpulet's environment and no
// input, and waits up to `timeout` for it to end (then kills it). OK when
// it exited with status 0; otherwise an error naming the command and how it
// ended.
absl::Status RunTool(const std::vector<std::string>& argv,
                     absl::Duration timeout);

// The environment a control process runs with: `base` ("KEY=value") without
// any CUDA_VISIBLE_DEVICES or CUDA_MPS_* entry, then the spec's three.
std::vector<std::string> DaemonEnvironment(const std::vector<std::string>& base,
                                           const DaemonSpec& spec);

}  // namespace gpulet::mps
