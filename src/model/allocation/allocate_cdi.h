// The CDI parts of an Allocate answer, as NVIDIA's k8s-device-plugin writes
// them: qualified device names ("k8s.device-plugin.nvidia.com/gpu=GPU-…"),
// the annotation key
// the container runtime looks for ("cdi.k8s.io/nvidia-device-plugin_<id>"),
// and the name checks of the CDI reference library
// (tags.cncf.io/container-device-interface pkg/parser and annotations).
//
// NVIDIA makes <id> a random UUID per response. gpulet derives it from the
// resource name and the requested device IDs instead (AllocationUid), so the
// same request gets the same answer, while two resources allocated to one
// container -- whose annotations the kubelet merges into one map, dropping
// a repeated key -- still get different keys.
//
// Thread safety: stateless functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpulet::allocation {

inline constexpr char kDefaultCdiAnnotationPrefix[] = "cdi.k8s.io/";
// The CDI vendor and class NVIDIA's plugin names its devices with, in its
// answers and in the spec it writes itself. Apart from the toolkit's
// "nvidia.com/gpu" (nvidia-ctk cdi generate, the GPU operator, gpulet cdi
// generate), so both specs can sit on one node without defining a device
// twice.
inline constexpr char kPluginCdiVendor[] = "k8s.device-plugin.nvidia.com";
inline constexpr char kPluginCdiClass[] = "gpu";
// The plugin part of NVIDIA's annotation key; kept so tools that look for
// NVIDIA's keys find gpulet's.
inline constexpr char kCdiAnnotationPluginName[] = "nvidia-device-plugin";
// CDI classes NVIDIA uses besides the GPU class.
inline constexpr char kCdiImexChannelClass[] = "imex-channel";

// CDI vendor or class name: a letter first, alphanumeric last,
// [A-Za-z0-9_.-] between. InvalidArgument naming `what` and the name.
absl::Status ValidateCdiVendorOrClass(const std::string& what,
                                      const std::string& name);
// CDI device name: alphanumeric first and last, [A-Za-z0-9_.:-] between.
absl::Status ValidateCdiDeviceName(const std::string& name);

// "<vendor>/<class>=<name>", unchecked.
std::string CdiQualifiedName(const std::string& vendor, const std::string& cls,
                             const std::string& name);

// A UUID-shaped ID (version 8, RFC 9562) derived from the resource name and
// the set of requested device IDs (order and repeats do not matter). Not
// cryptographic: it only has to differ between the resources of one
// container.
std::string AllocationUid(const std::string& resource_name,
                          const std::vector<std::string>& device_ids);

// `prefix` + plugin_name + "_" + allocation_id with '/' in the ID turned
// into '_', after the CDI library's checks on the part after the prefix:
// at most 63 characters, alphanumeric first and last, [A-Za-z0-9_.-]
// between. NVIDIA builds the key with the default prefix and then swaps in
// a custom one, which is the same string.
absl::StatusOr<std::string> CdiAnnotationKey(const std::string& prefix,
                                             const std::string& plugin_name,
                                             const std::string& allocation_id);

// The extra CDI devices NVIDIA adds to every GPU allocation when the
// feature is enabled and a CDI spec for it exists, in NVIDIA's order:
// "<vendor>/gdrcopy=all", "<vendor>/gds=all", "<vendor>/mofed=all".
std::vector<std::string> AdditionalCdiDevices(const std::string& vendor,
                                              bool gdrcopy, bool gds,
                                              bool mofed);

}  // namespace gpulet::allocation
