// The CDI spec `gpulet plugin` writes at start-up when a cdi-annotations or
// cdi-cri strategy is configured, so that the CDI names its Allocate answers
// carry ("k8s.device-plugin.nvidia.com/gpu=<uuid or index>") resolve in the
// container runtime. The spec's kind is NVIDIA's plugin's
// (k8s.device-plugin.nvidia.com/gpu), never the toolkit's nvidia.com/gpu,
// so it does not collide with a spec nvidia-ctk or `gpulet cdi generate`
// wrote on the same node.
//
// Discovery reads the driver where this process sees it (the container
// driver root inside NVIDIA's DaemonSet); the spec's host paths are then
// rewritten to the host's driver root, which is what the runtime sees.
//
// Thread safety: call from the daemon's main thread; touches the file
// system only.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "src/base/config/config.h"
#include "src/gpu/device/gpu.h"
#include "src/model/cdi/spec.h"
#include "src/model/resources/resource_handlers.h"

namespace gpulet::daemon {

// True when flags.plugin.deviceListStrategy names a CDI strategy.
bool WantsCdiSpec(const config::Config& config);

// Replaces the prefix `from` of every host path in `spec` (device nodes,
// mounts) by `to`; paths outside `from` are left alone. "/" as `to` makes
// "/driver-root/usr/lib/x" "/usr/lib/x".
void RebaseHostPaths(cdi::Spec& spec, const std::string& from,
                     const std::string& to);

// Generates the node's spec and writes it atomically into `dir`
// (cdi::WriteSpecFile, JSON, as NVIDIA's plugin writes it). Returns the path
// written. Errors name the driver root, the MIG device or the file.
absl::StatusOr<std::string> WriteCdiSpec(const device::Node& node,
                                         const config::Config& config,
                                         const resources::HostView& view,
                                         const std::string& dir);

}  // namespace gpulet::daemon
