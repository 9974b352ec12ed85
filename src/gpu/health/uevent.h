// Kernel uevents, the notice gpulet takes of a PCI function's driver
// binding changing: the kernel announces every bind and unbind (and every
// device added or removed) on the NETLINK_KOBJECT_UEVENT socket, while the
// `driver` links under the real /sys raise no inotify event.
//
//   OpenKernelUevents(): the kernel's socket (multicast group 1, what udev
//     reads; no privilege needed). Unavailable in a user namespace, whose
//     network namespaces get no kernel uevents: the caller then re-reads
//     on a slow timer instead.
//   OpenUeventRelay(path): a unix datagram socket bound at `path`, to which
//     the simulator's fake kernel sends the same messages for a rendered
//     tree (tests), or anything else that relays uevents.
//   ParseUevent(), AffectsPassthrough(): pure, over one datagram.
//
// Thread safety: functions are stateless; a descriptor is read by one
// thread.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/base/common/unique_fd.h"

namespace gpulet::health {

struct Uevent {
  std::string action;     // "bind", "unbind", "add", "remove", "change", ...
  std::string devpath;    // "/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"
  std::string subsystem;  // "pci", "mdev", "vfio", ...
  std::string driver;     // DRIVER=, on bind
};

// One kernel datagram: "<action>@<devpath>\0KEY=value\0...". udev's own
// re-broadcasts ("libudev" header) and anything without ACTION and DEVPATH
// are nullopt.
std::optional<Uevent> ParseUevent(absl::string_view datagram);

// Whether the event can change a passthrough device's health or the
// container/passthrough split: a PCI function bound, unbound, added or
// removed; a mediated device added or removed.
bool AffectsPassthrough(const Uevent& event);

// Non-blocking, close-on-exec. Errors name the call that failed (in a user
// namespace: FailedPrecondition saying so).
absl::StatusOr<common::UniqueFd> OpenKernelUevents();
absl::StatusOr<common::UniqueFd> OpenUeventRelay(const std::string& path);

// Reads every datagram waiting on `fd`; true when one AffectsPassthrough,
// or when the kernel dropped some (ENOBUFS: the caller must re-read).
bool DrainUevents(int fd);

}  // namespace gpulet::health
