// PassthroughWatcher: keeps the passthrough GPUs' health true to the host by
// re-reading sysfs (vfio::Discover) and handing each fresh inventory to a
// callback:
//   - when <dev>/vfio changes (inotify: a group node created or deleted,
//     the directory itself created or removed under <dev>);
//   - when the kernel announces a PCI function bound, unbound, added or
//     removed, or an mdev added or removed (uevent.h): how a driver binding
//     change is noticed, since the kernel raises no inotify events for links
//     changing under the real /sys, and binding a companion function to
//     vfio-pci creates no node when the group node already exists;
//   - when asked (Recheck: Allocate found a group node gone);
//   - every `resync` when it is set (a safety net, or a test that moves
//     links by hand); unset, every kFallbackResync only when no uevent
//     source could be opened (a user namespace). With uevents and no
//     `resync` the thread sleeps until something happens.
// The uevents come from the kernel's NETLINK_KOBJECT_UEVENT socket, or,
// when `uevent_socket` is set, from a unix datagram socket bound there (the
// simulator's fake kernel sends to it).
//
// Thread safety: one std::jthread owned and joined by the watcher runs the
// callback; Recheck may be called from any thread; construction and
// destruction from the owning thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/base/common/unique_fd.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::health {

class PassthroughWatcher {
 public:
  using Callback = std::function<void(const absl::StatusOr<vfio::Inventory>&)>;
  static constexpr absl::Duration kFallbackResync = absl::Seconds(30);

  // Starts watching; the first read happens at once, on the thread.
  static absl::StatusOr<std::unique_ptr<PassthroughWatcher>> Start(
      vfio::Roots roots, std::optional<absl::Duration> resync,
      Callback callback, const std::string& uevent_socket = "");
  ~PassthroughWatcher();
  PassthroughWatcher(const PassthroughWatcher&) = delete;
  PassthroughWatcher& operator=(const PassthroughWatcher&) = delete;

  // Re-reads soon, on the watcher's thread.
  void Recheck();

  // Whether uevents are read (else the periodic resync stands in).
  bool has_uevents() const { return uevents_.valid(); }

 private:
  PassthroughWatcher(vfio::Roots roots, std::optional<absl::Duration> resync,
                     Callback callback, common::UniqueFd inotify,
                     common::UniqueFd wake, common::UniqueFd uevents);
  void Run(std::stop_token stop);
  void WatchDirectories();

  const vfio::Roots roots_;
  const std::optional<absl::Duration> resync_;
  const Callback callback_;
  common::UniqueFd inotify_;
  common::UniqueFd wake_;     // eventfd: Recheck and stop
  common::UniqueFd uevents_;  // invalid: none, resync instead
  std::jthread thread_;       // last: joined before the members it reads go
};

}  // namespace gpulet::health
