// `gpulet-runtime hook update-ldcache --folder DIR...`: an OCI
// createContainer hook that refreshes the container's /etc/ld.so.cache so
// that injected driver libraries are found (the job of nvidia-ctk's hook of
// the same name). It reads the container state JSON (ociVersion, id,
// bundle, ...) from stdin, finds the rootfs from <bundle>/config.json, and
// runs the host's ldconfig with -r <rootfs> (ldconfig chroots there before
// touching any path, so links in the image cannot point it at host files),
// with the folders on its command line. The folders are also written to
// <rootfs>/etc/ld.so.conf.d/00-gpulet-cdi.conf when that directory exists,
// so a later ldconfig inside the container keeps them. Images without
// ldconfig work because the host's ldconfig is used.
//
// Thread safety: runs a child process; one call per process.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::runtime {

inline constexpr char kDefaultLdconfigPath[] = "/sbin/ldconfig";

// The rootfs of the container described by `state_json`.
absl::StatusOr<std::string> ContainerRootFromState(
    absl::string_view state_json);

// Runs the hook. A missing host ldconfig is logged and is not an error.
absl::Status UpdateLdCache(absl::string_view state_json,
                           const std::vector<std::string>& folders,
                           const std::string& ldconfig_path);

}  // namespace gpulet::runtime
