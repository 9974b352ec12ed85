// SignalChannel: the daemon's signals (SIGHUP, SIGTERM, SIGINT) as a file
// descriptor. Create() blocks them in the calling thread with
// pthread_sigmask, so every thread created afterwards (gRPC, NVML, the
// health monitor, the socket watcher) inherits the mask and none of them is
// ever interrupted; the daemon's event loop reads them from a signalfd.
//
// Ownership: owns the signalfd. The destructor discards signals still
// pending, so a second SIGTERM cannot kill the process after a clean
// shutdown, and restores the previous mask.
//
// Thread safety: create and destroy on the thread that runs the event loop,
// before it creates any other thread.
#pragma once

#include <signal.h>

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::daemon {

class SignalChannel {
  class PassKey {
    PassKey() = default;
    friend class SignalChannel;
  };

 public:
  static absl::StatusOr<std::unique_ptr<SignalChannel>> Create();
  SignalChannel(PassKey, common::UniqueFd fd, sigset_t old_mask)
      : fd_(std::move(fd)), old_mask_(old_mask) {}
  ~SignalChannel();
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  // Readable when a signal is pending.
  int fd() const { return fd_.get(); }
  // The next pending signal number, or 0 when none is pending.
  int Read();
  // Blocks until one of the signals arrives and returns it; -1 when waiting
  // failed (poll error), which the caller must treat as fatal.
  int Wait();

 private:
  common::UniqueFd fd_;
  sigset_t old_mask_;
};

// "SIGTERM", "SIGHUP", "SIGINT", or "signal <n>".
const char* SignalName(int signo);

}  // namespace gpulet::daemon
