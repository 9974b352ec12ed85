#include "src/gpu/health/passthrough_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>

#include <array>
#include <cerrno>
#include <utility>

#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/base/common/poll_timeout.h"
#include "src/gpu/health/uevent.h"

namespace gpulet::health {
namespace {

constexpr uint32_t kDirEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                                IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF;

void Drain(int fd) {
  std::array<char, 4096> buf;
  while (::read(fd, buf.data(), buf.size()) > 0) {
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<PassthroughWatcher>> PassthroughWatcher::Start(
    vfio::Roots roots, std::optional<absl::Duration> resync, Callback callback,
    const std::string& uevent_socket) {
  common::UniqueFd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify.valid()) {
    return common::ErrnoToStatus(errno, "inotify_init1 for /dev/vfio");
  }
  common::UniqueFd wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake.valid()) return common::ErrnoToStatus(errno, "eventfd");
  absl::StatusOr<common::UniqueFd> uevents =
      uevent_socket.empty() ? OpenKernelUevents()
                            : OpenUeventRelay(uevent_socket);
  if (!uevents.ok()) {
    if (!uevent_socket.empty()) return uevents.status();
    GPULET_LOG(WARNING) << "passthrough watcher: driver bindings are re-read "
                           "every "
                        << absl::FormatDuration(
                               resync.value_or(kFallbackResync))
                        << " instead of on kernel uevents: "
                        << uevents.status().message();
    uevents = common::UniqueFd();
  }
  std::unique_ptr<PassthroughWatcher> watcher(new PassthroughWatcher(
      std::move(roots), resync, std::move(callback), std::move(inotify),
      std::move(wake), *std::move(uevents)));
  watcher->thread_ =
      std::jthread([w = watcher.get()](std::stop_token stop) { w->Run(stop); });
  return watcher;
}

PassthroughWatcher::PassthroughWatcher(
    vfio::Roots roots, std::optional<absl::Duration> resync, Callback callback,
    common::UniqueFd inotify, common::UniqueFd wake, common::UniqueFd uevents)
    : roots_(std::move(roots)),
      resync_(resync),
      callback_(std::move(callback)),
      inotify_(std::move(inotify)),
      wake_(std::move(wake)),
      uevents_(std::move(uevents)) {}

PassthroughWatcher::~PassthroughWatcher() {
  thread_.request_stop();
  Recheck();
  if (thread_.joinable()) thread_.join();
}

void PassthroughWatcher::Recheck() {
  uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
}

// Adding a watch that exists is harmless, so both are (re)added before
// every read: <dev>/vfio may appear after start (vfio-pci loaded later) or
// be recreated.
void PassthroughWatcher::WatchDirectories() {
  ::inotify_add_watch(inotify_.get(), roots_.dev.c_str(),
                      IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO);
  ::inotify_add_watch(inotify_.get(), (roots_.dev / "vfio").c_str(),
                      kDirEvents);
}

// Every kernel uevent wakes the thread (the socket takes them all), but
// only one about a PCI binding or an mdev makes it re-read sysfs.
void PassthroughWatcher::Run(std::stop_token stop) {
  int timeout_ms = -1;
  if (resync_ || !uevents_.valid()) {
    timeout_ms = common::PollTimeoutMs(resync_.value_or(kFallbackResync));
  }
  bool read = true;
  while (!stop.stop_requested()) {
    if (read) {
      WatchDirectories();
      callback_(vfio::Discover(roots_));
    }
    std::array<pollfd, 3> fds = {pollfd{inotify_.get(), POLLIN, 0},
                                 pollfd{wake_.get(), POLLIN, 0},
                                 pollfd{uevents_.get(), POLLIN, 0}};
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) {
      GPULET_LOG(ERROR) << "passthrough watcher: poll failed, errno " << errno;
      return;
    }
    read = n == 0 || fds[0].revents != 0 || fds[1].revents != 0;
    if (fds[2].revents != 0) read = DrainUevents(uevents_.get()) || read;
    Drain(inotify_.get());
    Drain(wake_.get());
  }
}

}  // namespace gpulet::health
