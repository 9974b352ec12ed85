// BuildSpec: the CDI spec for one node's GPUs, from the device model
// (device::Node, discovered through NVML) and the driver's files
// (driver.h). Pure: no file system, no NVML.
//
// Layout (docs/cdi.md): one CDI device per GPU named by its index ("0") and
// one by its UUID ("GPU-…"); one per MIG device named "<gpu index>:<mig
// index>" and by UUID ("MIG-…"); and "all". A GPU device carries
// /dev/nvidia<minor>; a MIG device its parent's node plus the GPU-instance
// and compute-instance capability nodes /dev/nvidia-caps/nvidia-cap<N>.
// Spec-wide edits carry the control nodes present on the host, the driver's
// libraries and utility binaries as read-only bind mounts (host path under
// the driver root, container path without it), NVIDIA_VISIBLE_DEVICES=void
// (so a legacy NVIDIA hook in the same runtime does nothing a second time,
// as nvidia-ctk's specs do) and, only when libraries are mounted, a
// createContainer hook that refreshes the container's ld cache:
//   <hook_path> hook update-ldcache --folder <dir> [--folder <dir>...]
// with argv[0] "gpulet-runtime", env {kHookEnv} and timeout
// kHookTimeoutSeconds (SetHookDefaults).
//
// Thread safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/gpu/device/gpu.h"
#include "src/model/cdi/driver.h"
#include "src/model/cdi/spec.h"

namespace gpulet::cdi {

inline constexpr char kDefaultHookPath[] = "/usr/bin/gpulet-runtime";

// The whole environment of every hook gpulet writes, and of a hook without
// `env` that gpulet-runtime applies. runc runs a hook that has no `env`
// with the environment of `runc init`, which by then holds the container's
// process.env: an image's LD_PRELOAD would run in the hook as host root
// (CVE-2025-23266). docs/runtime.md, "Threat model".
inline constexpr char kHookEnv[] =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// runc kills a hook (and fails the container) that runs longer than this.
inline constexpr int kHookTimeoutSeconds = 30;

struct BuildOptions {
  std::string vendor = kDefaultVendor;
  std::string cls = kDefaultClass;
  // The gpulet-runtime binary the ld-cache hook runs, as the runtime sees it.
  std::string hook_path = kDefaultHookPath;
  // Library capabilities to mount ("utility", "compute", "video"); empty:
  // every library found.
  std::vector<std::string> capabilities;
  bool mount_binaries = true;
  // A MIG device whose capability minors mig-minors does not list is an
  // error (true) or left out of the spec with a warning in the log (false).
  bool require_mig_caps = true;
};

// Mount options of every library and binary mount (nvidia-ctk's).
inline constexpr const char* kMountOptions[] = {"ro", "nosuid", "nodev",
                                                "rbind", "rprivate"};

// The spec, with cdiVersion = MinimumVersion and already Validate()d.
// Errors: FailedPrecondition when the node has no GPU (a spec needs a
// device) or a MIG device's capability minors are unknown (see
// require_mig_caps); InvalidArgument for a bad vendor or class.
absl::StatusOr<Spec> BuildSpec(const device::Node& node, const Driver& driver,
                               const BuildOptions& options = {});

// Every hook in `spec` (spec-wide and in every device) without an env gets
// {kHookEnv}, and one without a timeout kHookTimeoutSeconds. Applied to
// every spec gpulet writes (BuildSpec, the DRA claim specs).
void SetHookDefaults(Spec& spec);

// The device node for `path` ("/dev/nvidia3"): from the host when present,
// otherwise built from what is known (type "c", `major` when >= 0 and
// `minor`), with host_path set only when the dev root is not "/".
DeviceNode NodeFor(const Driver& driver, const std::string& path, int64_t major,
                   int64_t minor);

}  // namespace gpulet::cdi
