// Which GPUs a container asks for, read from its OCI config the ways
// nvidia-container-toolkit reads them:
//   - CDI annotations: every annotation whose key starts with the prefix
//     ("cdi.k8s.io/") holds comma-separated qualified names
//     ("nvidia.com/gpu=0");
//   - volume mounts: mounts whose destination is under
//     /var/run/nvidia-container-devices/ name one device ID each (the
//     kubelet sets them, so an image cannot forge them);
//   - NVIDIA_VISIBLE_DEVICES in process.env: unset, empty or "void" → none;
//     "none" → no GPU but the driver (the spec-level edits: control nodes,
//     libraries, hooks); "all"; or a comma list of indexes ("0"), MIG
//     indexes ("0:1"), GPU-/MIG- UUIDs or qualified CDI names. Its value is
//     /var/run/nvidia-container-devices when the IDs come as mounts.
// Device IDs become qualified names "<vendor>/<class>=<id>".
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace gpulet::runtime {

inline constexpr char kVisibleDevicesEnv[] = "NVIDIA_VISIBLE_DEVICES";
inline constexpr char kVolumeMountDir[] = "/var/run/nvidia-container-devices";
inline constexpr char kCdiAnnotationPrefix[] = "cdi.k8s.io/";

struct RequestOptions {
  std::string vendor = "nvidia.com";
  std::string device_class = "gpu";
  // When false, an unprivileged container (no CAP_SYS_ADMIN in its bounding
  // set) asking through NVIDIA_VISIBLE_DEVICES is refused with an error.
  bool accept_envvar_unprivileged = true;
  std::string annotation_prefix = kCdiAnnotationPrefix;
};

struct GpuRequest {
  std::vector<std::string> cdi_names;  // qualified, deduplicated, in order
  // NVIDIA_VISIBLE_DEVICES=none: inject the spec-level edits of
  // <vendor>/<class> without any device.
  bool driver_only = false;
  bool empty() const { return cdi_names.empty() && !driver_only; }
  bool operator==(const GpuRequest&) const = default;
};

// The request in `config` (a config.json validated by ParseOciConfig).
// Errors: a malformed qualified name (naming the annotation or variable it
// came from) and, when !accept_envvar_unprivileged, an env request from an
// unprivileged container (PermissionDenied).
absl::StatusOr<GpuRequest> DetectRequest(const nlohmann::json& config,
                                         const RequestOptions& options);

// Splits a qualified name "vendor/class=name" into kind ("vendor/class")
// and device name. REQUIRES: cdi::ParseQualifiedName(name).ok().
std::pair<std::string, std::string> SplitQualifiedName(absl::string_view name);

}  // namespace gpulet::runtime
