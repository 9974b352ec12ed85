// SocketWatcher: tells the daemon when the kubelet restarted (kubelet.sock
// created again) or when one of our plugin sockets was deleted, using
// inotify on the plugin directory.
//
// One background std::jthread blocks in poll() on the inotify fd and an
// eventfd used to stop it; no polling loop. Events are coalesced: the
// callback gets what happened since the last call.
//
// Thread safety: the callback runs on the watcher's thread; constructor and
// destructor from the owning thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpulet::registration {

struct SocketEvent {
  bool kubelet_socket_created = false;
  std::vector<std::string> deleted;  // our socket file names that went away
};

class SocketWatcher {
 public:
  using Callback = std::function<void(const SocketEvent&)>;

  // Watches `dir` for creation of `kubelet_socket_name` and deletion of any
  // name in `own_sockets`.
  static absl::StatusOr<std::unique_ptr<SocketWatcher>> Create(
      const std::string& dir, const std::string& kubelet_socket_name,
      std::vector<std::string> own_sockets, Callback callback);
  virtual ~SocketWatcher() = default;
};

}  // namespace gpulet::registration
