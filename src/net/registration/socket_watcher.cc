#include "src/net/registration/socket_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::registration {

using common::UniqueFd;
namespace {

constexpr uint32_t kDirMask = IN_CREATE | IN_MOVED_TO | IN_DELETE |
                              IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF |
                              IN_ONLYDIR;
// On the parent we only care about the plugin directory coming back.
constexpr uint32_t kParentMask = IN_CREATE | IN_MOVED_TO | IN_ONLYDIR;

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

class InotifySocketWatcher final : public SocketWatcher {
 public:
  InotifySocketWatcher(std::string dir, std::string kubelet_socket_name,
                       std::vector<std::string> own_sockets, Callback callback,
                       UniqueFd inotify, UniqueFd stop)
      : dir_(std::move(dir)),
        kubelet_name_(std::move(kubelet_socket_name)),
        own_(std::move(own_sockets)),
        callback_(std::move(callback)),
        inotify_(std::move(inotify)),
        stop_(std::move(stop)) {
    std::filesystem::path path(dir_);
    if (!path.has_filename()) path = path.parent_path();  // trailing '/'
    dir_name_ = path.filename().string();
    parent_ = path.parent_path().string();
  }

  ~InotifySocketWatcher() override {
    const uint64_t one = 1;
    // The eventfd wakes poll(); a failed write cannot happen for a counter
    // this far from overflow.
    (void)!::write(stop_.get(), &one, sizeof(one));
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Start() {
    // The parent watch is best effort: without it a deleted directory is
    // reported, but its re-creation is noticed only by the daemon's retries.
    if (!parent_.empty()) {
      parent_wd_ =
          inotify_add_watch(inotify_.get(), parent_.c_str(), kParentMask);
    }
    dir_wd_ = inotify_add_watch(inotify_.get(), dir_.c_str(), kDirMask);
    if (dir_wd_ < 0) {
      return common::ErrnoToStatus(errno,
                                   absl::StrCat("inotify watch on ", dir_));
    }
    thread_ = std::jthread([this] { Loop(); });
    return absl::OkStatus();
  }

 private:
  void Loop() {
    pollfd fds[2] = {{inotify_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    while (true) {
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        GPULET_LOG(ERROR) << "socket watcher on " << dir_
                          << " stopped: poll failed, errno " << errno;
        return;
      }
      if (fds[1].revents != 0) return;
      if ((fds[0].revents & POLLIN) == 0) continue;
      SocketEvent event;
      Drain(event);
      if (event.kubelet_socket_created || !event.deleted.empty()) {
        callback_(event);
      }
    }
  }

  // Reads every queued inotify event (the fd is non-blocking), so bursts
  // such as a kubelet restart reach the callback as one SocketEvent.
  void Drain(SocketEvent& event) {
    alignas(inotify_event) char buffer[16 * 1024];
    while (true) {
      ssize_t n = ::read(inotify_.get(), buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      for (ssize_t off = 0; off < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buffer + off);
        Handle(*e, e->len > 0 ? std::string(e->name) : std::string(), event);
        off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
  }

  void Handle(const inotify_event& e, const std::string& name,
              SocketEvent& event) {
    if (e.mask & IN_Q_OVERFLOW) {
      // Events were dropped: anything may have happened. Report everything
      // as possibly changed; the daemon compares file identities and
      // restarts only what really changed.
      GPULET_LOG(WARNING) << "inotify queue overflowed for " << dir_
                          << "; re-checking the kubelet socket and ours";
      event.kubelet_socket_created = true;
      for (const std::string& own : own_) AddDeleted(own, event);
      return;
    }
    if (e.wd == parent_wd_ && parent_wd_ >= 0) {
      if (name == dir_name_ && dir_wd_ < 0) ReattachDir(event);
      return;
    }
    if (e.wd != dir_wd_) return;
    if (e.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
      DirGone(event);
      return;
    }
    if ((e.mask & (IN_CREATE | IN_MOVED_TO)) && name == kubelet_name_) {
      event.kubelet_socket_created = true;
    } else if (e.mask & (IN_DELETE | IN_MOVED_FROM)) {
      AddDeleted(name, event);
    }
  }

  void AddDeleted(const std::string& name, SocketEvent& event) {
    if (std::find(own_.begin(), own_.end(), name) == own_.end()) return;
    if (std::find(event.deleted.begin(), event.deleted.end(), name) ==
        event.deleted.end()) {
      event.deleted.push_back(name);
    }
  }

  // Our sockets went with the directory; the kubelet will recreate both.
  void DirGone(SocketEvent& event) {
    if (dir_wd_ < 0) return;
    inotify_rm_watch(inotify_.get(), dir_wd_);  // no-op if already gone
    dir_wd_ = -1;
    GPULET_LOG(WARNING) << "plugin directory " << dir_
                        << " was removed; waiting for it to come back";
    for (const std::string& name : own_) AddDeleted(name, event);
  }

  void ReattachDir(SocketEvent& event) {
    dir_wd_ = inotify_add_watch(inotify_.get(), dir_.c_str(), kDirMask);
    if (dir_wd_ < 0) return;
    GPULET_LOG(INFO) << "plugin directory " << dir_ << " is back";
    // kubelet.sock may have been created before the watch existed.
    if (Exists(absl::StrCat(dir_, "/", kubelet_name_))) {
      event.kubelet_socket_created = true;
    }
  }

  const std::string dir_;
  const std::string kubelet_name_;
  const std::vector<std::string> own_;
  const Callback callback_;
  std::string dir_name_;
  std::string parent_;
  UniqueFd inotify_;
  UniqueFd stop_;
  // Touched by Start() before the thread exists, then only by the thread.
  int dir_wd_ = -1;
  int parent_wd_ = -1;
  std::jthread thread_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SocketWatcher>> SocketWatcher::Create(
    const std::string& dir, const std::string& kubelet_socket_name,
    std::vector<std::string> own_sockets, Callback callback) {
  UniqueFd inotify(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify.valid()) return common::ErrnoToStatus(errno, "inotify_init1");
  UniqueFd stop(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) return common::ErrnoToStatus(errno, "eventfd");
  auto watcher = std::make_unique<InotifySocketWatcher>(
      dir, kubelet_socket_name, std::move(own_sockets), std::move(callback),
      std::move(inotify), std::move(stop));
  absl::Status started = watcher->Start();
  if (!started.ok()) return started;
  return std::unique_ptr<SocketWatcher>(std::move(watcher));
}

}  // namespace gpulet::registration
