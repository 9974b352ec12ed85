#include "src/plugin/daemon/loop_wake.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>

#include "src/base/common/errors.h"

namespace gpulet::daemon {

LoopWake::LoopWake(std::string plugin_dir, std::string kubelet_name)
    : plugin_dir_(std::move(plugin_dir)),
      kubelet_name_(std::move(kubelet_name)) {}

// The watcher's thread reaches pending_ and the eventfd: it goes first.
LoopWake::~LoopWake() { StopWatching(); }

absl::Status LoopWake::Open() {
  wake_ = common::UniqueFd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_.valid()) return common::ErrnoToStatus(errno, "eventfd");
  return absl::OkStatus();
}

absl::Status LoopWake::Watch(const std::vector<std::string>& sockets) {
  if (watcher_ != nullptr && sockets == sockets_) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<registration::SocketWatcher>> watcher =
      registration::SocketWatcher::Create(
          plugin_dir_, kubelet_name_, sockets,
          [this](const registration::SocketEvent& e) { OnSocketEvent(e); });
  if (!watcher.ok()) return watcher.status();
  watcher_ = *std::move(watcher);
  sockets_ = sockets;
  return absl::OkStatus();
}

void LoopWake::StopWatching() {
  watcher_.reset();
  sockets_.clear();
}

void LoopWake::OnSocketEvent(const registration::SocketEvent& event) {
  {
    absl::MutexLock lock(&mu_);
    pending_.kubelet_socket_created |= event.kubelet_socket_created;
    for (const std::string& name : event.deleted) {
      if (std::find(pending_.deleted.begin(), pending_.deleted.end(), name) ==
          pending_.deleted.end()) {
        pending_.deleted.push_back(name);
      }
    }
  }
  Wake();
}

void LoopWake::Wake() {
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
}

registration::SocketEvent LoopWake::Take() {
  uint64_t count;
  (void)!::read(wake_.get(), &count, sizeof(count));
  registration::SocketEvent event;
  absl::MutexLock lock(&mu_);
  std::swap(event, pending_);
  return event;
}

void LoopWake::Clear() {
  {
    absl::MutexLock lock(&mu_);
    pending_ = registration::SocketEvent{};
  }
  uint64_t ignored;
  (void)!::read(wake_.get(), &ignored, sizeof(ignored));
}

}  // namespace gpulet::daemon
