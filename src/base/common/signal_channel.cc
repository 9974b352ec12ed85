#include "src/base/common/signal_channel.h"

#include <poll.h>
#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

#include "src/base/common/errors.h"

namespace gpulet::daemon {
namespace {

sigset_t DaemonSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SignalChannel>> SignalChannel::Create() {
  sigset_t set = DaemonSignals();
  sigset_t old_mask;
  int rc = pthread_sigmask(SIG_BLOCK, &set, &old_mask);
  if (rc != 0) return common::ErrnoToStatus(rc, "pthread_sigmask");
  common::UniqueFd fd(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd.valid()) {
    int err = errno;
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    return common::ErrnoToStatus(err, "signalfd");
  }
  return std::make_unique<SignalChannel>(PassKey(), std::move(fd), old_mask);
}

SignalChannel::~SignalChannel() {
  while (Read() != 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

int SignalChannel::Read() {
  signalfd_siginfo info;
  while (true) {
    ssize_t n = ::read(fd_.get(), &info, sizeof(info));
    if (n == static_cast<ssize_t>(sizeof(info))) {
      return static_cast<int>(info.ssi_signo);
    }
    if (n < 0 && errno == EINTR) continue;
    return 0;
  }
}

int SignalChannel::Wait() {
  pollfd pfd = {fd_.get(), POLLIN, 0};
  while (true) {
    int signo = Read();
    if (signo != 0) return signo;
    if (::poll(&pfd, 1, -1) < 0 && errno != EINTR) return -1;
  }
}

const char* SignalName(int signo) {
  switch (signo) {
    case SIGHUP:
      return "SIGHUP";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return "signal";
  }
}

}  // namespace gpulet::daemon
