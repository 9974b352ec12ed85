// `gpulet-runtime hook update-ldcache --folder DIR...`: an OCI
// createContainer hook that refreshes the container's /etc/ld.so.cache so
// that injected driver libraries are found (the job of nvidia-ctk's hook of
// the same name). It reads the container state JSON from stdin (runc
// writes it), takes the rootfs from <bundle>/config.json (the engine wrote
// it), and runs the host's ldconfig confined to the container: in a child
// process with a private mount namespace whose root is the rootfs, with the
// runtime side's root and every procfs/sysfs mount detached (ldcache_jail.h),
// only CAP_DAC_OVERRIDE, no_new_privs, no inherited descriptor and a fixed
// environment. Nothing the image controls (symlinks, its ld.so.conf) is
// resolved on the runtime side, so no host file can change. There the
// folders are also written to /etc/ld.so.conf.d/00-gpulet-cdi.conf when the
// image has that directory, so a later ldconfig in the container keeps
// them. Images without ldconfig work because the host's is used; it must
// be a static ELF program (static_elf.h), since a dynamic one would take
// its loader from the image. docs/runtime.md, "The ld-cache hook".
//
// Thread safety: forks; call from a single-threaded process (the hook's
// own main), one call at a time.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::runtime {

inline constexpr char kDefaultLdconfigPath[] = "/sbin/ldconfig";
// The file the folders are written to, under the container's root.
inline constexpr char kLdSoConfFile[] = "/etc/ld.so.conf.d/00-gpulet-cdi.conf";

// The rootfs of the container described by `state_json`.
absl::StatusOr<std::string> ContainerRootFromState(
    absl::string_view state_json);

// Runs the hook. A host without ldconfig at `ldconfig_path`, or with one
// that is not a static ELF program, is logged and is not an error (the
// cache is left as the image has it). Errors name the step and the path:
// the confinement failing, ldconfig failing (its own message is on the
// hook's stderr), or 00-gpulet-cdi.conf there but not a regular file.
absl::Status UpdateLdCache(absl::string_view state_json,
                           const std::vector<std::string>& folders,
                           const std::string& ldconfig_path);

// Writes the folders, one a line, to kLdSoConfFile under `root_fd` (a
// directory descriptor for the container's root) when its
// etc/ld.so.conf.d is a directory; a missing etc is created. Opens each
// component with O_NOFOLLOW and the file with O_NONBLOCK, so neither a
// symlink nor a FIFO planted there is followed or blocks; anything but a
// regular file at the file's path is an error naming `root_name` + path.
// Called by the confined child; exposed for tests.
absl::Status WriteLdSoConf(int root_fd, const std::string& root_name,
                           const std::vector<std::string>& folders);

}  // namespace gpulet::runtime
