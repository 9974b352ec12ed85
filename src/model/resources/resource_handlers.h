// The per-resource Allocate options and the device-model options a session
// derives from the configuration: which strategies answer Allocate, where
// device nodes are looked up, MIG caps nodes, IMEX channels, MPS, and the
// shared-request limit. Values, so that the mapping from NVIDIA's flags to
// what each resource does is table-tested; the daemon only wires them.
//
// Thread safety: pure functions, apart from the file-system probes named.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "src/base/config/config.h"
#include "src/model/allocation/allocate_response.h"
#include "src/model/resources/resources.h"

namespace gpulet::resources {

// Where the host's paths are visible to this process. Inside NVIDIA's
// DaemonSet the host's driver root is mounted at
// flags.plugin.containerDriverRoot; on the host itself it is the driver root.
struct HostView {
  std::string dev_root;    // host path of the dev root (flags.nvidiaDevRoot)
  std::string probe_root;  // where this process sees that dev root
  std::string proc_root = "/";  // for /proc/driver/nvidia-caps/mig-minors
  // Where this process sees the host's driver root: NVML is loaded and the
  // CDI driver discovery reads from here.
  std::string driver_root = {};
  // This process's own file system root, "/" outside tests. passDeviceSpecs
  // looks for the control nodes (/dev/nvidiactl, ...) here, as NVIDIA's
  // plugin does (os.Stat on the container path): the plugin's container
  // gets the node's GPU device nodes from the runtime
  // (NVIDIA_VISIBLE_DEVICES=all, or privileged), whatever the dev root is,
  // while <probe_root>/dev is usually not mounted at all.
  std::string own_root = "/";
};

// The HostView for a resolved configuration: driver_root is the container
// driver root when that directory exists, else the driver root; probe_root
// is driver_root when the dev root is the driver root, else the dev root.
HostView MakeHostView(const config::Config& config);

// The Allocate options of one resource. FailedPrecondition when
// imex.required and a configured IMEX channel node is missing.
absl::StatusOr<allocation::AllocateOptions> AllocateOptionsFor(
    const config::Config& config, const ResourceSpec& spec,
    const HostView& view);

// The ResourceOptions of a session: MIG devices' caps nodes from
// /proc/driver/nvidia-caps/mig-minors (none when the file is absent, as on a
// driver without MIG or in the simulator).
ResourceOptions MakeResourceOptions(const std::string& socket_prefix,
                                    const HostView& view);

}  // namespace gpulet::resources
