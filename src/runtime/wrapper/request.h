// Which GPUs a container asks for, read from its OCI config the ways
// nvidia-container-toolkit reads them. Only what the kubelet wrote may name
// a device of any kind; what an image or a pod spec wrote is confined:
//   - CDI annotations: every annotation whose key starts with the prefix
//     ("cdi.k8s.io/") holds comma-separated qualified names
//     ("nvidia.com/gpu=0"). Container engines pass the kubelet's container
//     annotations (device plugin, resource claims) into the OCI config, not
//     the pod's (docs/runtime.md says which engine settings keep it so);
//   - volume mounts: bind mounts whose source is /dev/null and whose
//     destination is /var/run/nvidia-container-devices/<id> name one device
//     ID each (the kubelet writes them for the device plugin). A mount of
//     any other source there (an emptyDir) asks for nothing;
//   - NVIDIA_VISIBLE_DEVICES in process.env: unset, empty or "void" → none;
//     "none" → no GPU but the driver (the spec-level edits: control nodes,
//     libraries, hooks); "all"; or a comma list of indexes ("0"), MIG
//     indexes ("0:1"), GPU-/MIG- UUIDs or qualified names of the default
//     kind <vendor>/<class> only. Its value is
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
// The source of the kubelet's device-list mounts.
inline constexpr char kVolumeMountSource[] = "/dev/null";
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
// came from); PermissionDenied for a qualified name in NVIDIA_VISIBLE_DEVICES
// of another kind than <vendor>/<class> (naming the variable and the name)
// and, when !accept_envvar_unprivileged, for an env request from an
// unprivileged container. No error names a device the container did not.
absl::StatusOr<GpuRequest> DetectRequest(const nlohmann::json& config,
                                         const RequestOptions& options);

// Splits a qualified name "vendor/class=name" into kind ("vendor/class")
// and device name. REQUIRES: cdi::ParseQualifiedName(name).ok().
std::pair<std::string, std::string> SplitQualifiedName(absl::string_view name);

}  // namespace gpulet::runtime
