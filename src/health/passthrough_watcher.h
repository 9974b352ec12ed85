// PassthroughWatcher: keeps the passthrough GPUs' health true to the host by
// re-reading sysfs (vfio::Discover) and handing each fresh inventory to a
// callback:
//   - when <dev>/vfio changes (inotify: a group node created or deleted,
//     the directory itself created or removed under <dev>);
//   - when asked (Recheck: Allocate found a group node gone);
//   - every `resync` otherwise.
// The periodic re-read is what notices a driver binding change: the kernel
// raises no inotify events for links changing under the real /sys, and
// binding a companion function to vfio-pci creates no node when the group
// node already exists. So bindings are re-checked on every /dev/vfio event
// and on the slow resync, never polled fast.
//
// Thread safety: one std::jthread owned and joined by the watcher runs the
// callback; Recheck may be called from any thread; construction and
// destruction from the owning thread.
#pragma once

#include <functional>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/common/unique_fd.h"
#include "src/vfio/vfio.h"

namespace gpulet::health {

class PassthroughWatcher {
 public:
  using Callback = std::function<void(const absl::StatusOr<vfio::Inventory>&)>;

  // Starts watching; the first read happens at once, on the thread.
  static absl::StatusOr<std::unique_ptr<PassthroughWatcher>> Start(
      vfio::Roots roots, absl::Duration resync, Callback callback);
  ~PassthroughWatcher();
  PassthroughWatcher(const PassthroughWatcher&) = delete;
  PassthroughWatcher& operator=(const PassthroughWatcher&) = delete;

  // Re-reads soon, on the watcher's thread.
  void Recheck();

 private:
  PassthroughWatcher(vfio::Roots roots, absl::Duration resync,
                     Callback callback, common::UniqueFd inotify,
                     common::UniqueFd wake);
  void Run(std::stop_token stop);
  void WatchDirectories();

  const vfio::Roots roots_;
  const absl::Duration resync_;
  const Callback callback_;
  common::UniqueFd inotify_;
  common::UniqueFd wake_;  // eventfd: Recheck and stop
  std::jthread thread_;    // last: joined before the members it reads go
};

}  // namespace gpulet::health
