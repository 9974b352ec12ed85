// LoopWake: what wakes the daemon's event loop besides a signal: the
// socket watcher over the kubelet's plugin directory (its events gathered
// here until the loop takes them) and requests from other threads (a
// passthrough re-plan), through one eventfd the loop polls.
//
// Thread safety: thread-safe. Open, Watch, StopWatching, Take and Clear
// are the loop thread's; the watcher's thread adds events and any thread
// may Wake.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "src/base/common/unique_fd.h"
#include "src/net/registration/socket_watcher.h"

namespace gpulet::daemon {

class LoopWake {
 public:
  // `plugin_dir` holds the kubelet's socket, `kubelet_name`.
  LoopWake(std::string plugin_dir, std::string kubelet_name);
  ~LoopWake();
  LoopWake(const LoopWake&) = delete;
  LoopWake& operator=(const LoopWake&) = delete;

  // Creates the eventfd; before fd() is polled.
  absl::Status Open();
  int fd() const { return wake_.get(); }
  // Watches the kubelet socket and `sockets` (kept while they stay). The
  // new watcher runs before the old one goes: no event is lost.
  absl::Status Watch(const std::vector<std::string>& sockets)
      ABSL_LOCKS_EXCLUDED(mu_);
  void StopWatching();
  void Wake();
  // The socket events gathered since the last Take; drains the eventfd.
  registration::SocketEvent Take() ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets gathered events and drains the eventfd (a session's end).
  void Clear() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void OnSocketEvent(const registration::SocketEvent& event)
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::string plugin_dir_;
  const std::string kubelet_name_;
  common::UniqueFd wake_;
  // The loop thread's.
  std::vector<std::string> sockets_;
  std::unique_ptr<registration::SocketWatcher> watcher_;
  absl::Mutex mu_;
  registration::SocketEvent pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::daemon
