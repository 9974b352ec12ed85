// Confining the process that updates a container's ld cache to what the
// container itself can reach: its root, with no procfs or sysfs of the
// runtime side left, and with only the capability ldconfig needs.
//
// The update-ldcache hook (ldcache_hook.h) runs from `runc init` before
// pivot_root: its root is the host's, and the container's /proc, already
// mounted in the rootfs, holds magic links (/proc/1/root) back to it. Any
// path the image controls (a symlinked /etc, /usr/lib, ld.so.conf include)
// resolved there can land on the host. After EnterContainerRoot, the
// process's root is the container rootfs, the runtime side's root is
// detached, and every procfs and sysfs mount below the new root is
// detached too, so no name the process resolves leaves the container.
//
// Thread safety: these change the calling process (mount namespace, root,
// capabilities); call them only in a single-threaded child made for the
// purpose, never in a process that goes on to do other work.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gpulet::runtime {

// The mount points of the procfs and sysfs mounts at or below `root` in a
// /proc/<pid>/mountinfo text, relative to `root` ("/proc", "/sys/fs/x"),
// in the order listed. `root` is canonical (no symlinks, no trailing '/');
// mountinfo's octal escapes (\040 for a space ...) are decoded.
std::vector<std::string> KernelMountsUnder(absl::string_view mountinfo,
                                           absl::string_view root);

// In the calling process: a new private mount namespace (nothing propagates
// to or from the runtime's), `root` bind-mounted onto itself and made the
// root (pivot_root), the old root detached, then every procfs and sysfs
// mount in the new root detached. The working directory is "/" afterwards.
// `root` is the trusted rootfs path from the bundle's config.json. Errors
// name the step and the path.
absl::Status EnterContainerRoot(const std::string& root);

// In the calling process: drops every capability but CAP_DAC_OVERRIDE from
// the bounding, permitted, effective and inheritable sets, clears the
// ambient set and sets no_new_privs, so a program it executes (ldconfig,
// run as root in the container's root) can neither mount, nor chroot, nor
// trace, nor regain a capability.
absl::Status DropPrivileges();

}  // namespace gpulet::runtime
