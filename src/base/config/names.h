// Syntax rules for the names a configuration holds: extended resource names
// (NVIDIA's "nvidia.com/" prefixing and 63-character limit), device
// references in sharing.*.resources[].devices, and the CDI annotation
// prefix. Each check returns OK or InvalidArgument whose message says what
// is wrong with the value; callers add the key path.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpulet::config {

inline constexpr char kResourceNamePrefix[] = "nvidia.com";
inline constexpr size_t kMaxResourceNameLength = 63;
inline constexpr char kSharedResourceSuffix[] = ".shared";

// Lowercase letters, digits, '-' and '.', each dot-separated label starting
// and ending with a letter or digit; at most 253 characters (Kubernetes'
// IsDNS1123Subdomain).
bool IsDnsSubdomain(absl::string_view s);

// NVIDIA's NewResourceName: "gpu" -> "nvidia.com/gpu"; a name already
// starting with "nvidia.com/" is kept. The result must be at most 63
// characters and the part after "nvidia.com/" a DNS subdomain, so
// "example.com/gpu" is refused, as NVIDIA refuses it.
absl::StatusOr<std::string> QualifyResourceName(absl::string_view name);

// OK when `name` is what QualifyResourceName returns for it.
absl::Status CheckQualifiedResourceName(absl::string_view name);

// An extended resource name of any domain, "<domain>/<name>", for resources
// gpulet's own features advertise (sharing.memory.resourceName may be
// gpushare's "aliyun.com/gpu-mem"): the domain a DNS subdomain, the name a
// DNS subdomain of at most 63 characters. A name without '/' gets
// "nvidia.com/" first (QualifyExtendedResourceName).
absl::StatusOr<std::string> QualifyExtendedResourceName(absl::string_view name);
absl::Status CheckExtendedResourceName(absl::string_view name);

// sharing.memory.unit in MiB: "MiB", "GiB", or a count of them ("512MiB",
// "2GiB"), between 1 MiB and 1 TiB.
absl::StatusOr<int64_t> ParseMemoryUnit(absl::string_view text);
// The canonical spelling of a unit: "GiB", "MiB", "2GiB", "512MiB".
std::string MemoryUnitName(int64_t unit_mib);

enum class DeviceRefKind { kInvalid, kGpuIndex, kMigIndex, kGpuUuid, kMigUuid };

// "3" GPU index; "3:1" MIG index (GPU 3, MIG device 1);
// "GPU-<uuid>"; "MIG-<uuid>" or "MIG-GPU-<uuid>/<gi>/<ci>". A <uuid> is 32
// hex digits, optionally in 8-4-4-4-12 groups (what Go's uuid.Parse takes
// from NVIDIA's files).
DeviceRefKind ClassifyDeviceRef(absl::string_view ref);

// A CDI annotation key is "<prefix><plugin>_<id>" and must be a Kubernetes
// annotation key, so the prefix is a DNS subdomain followed by '/'
// ("cdi.k8s.io/").
absl::Status CheckCdiAnnotationPrefix(absl::string_view prefix);

}  // namespace gpulet::config
