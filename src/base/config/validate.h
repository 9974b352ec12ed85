// NVIDIA k8s-device-plugin's configuration rules, checked on a Config
// value wherever it came from (file, flags, environment, code).
//
// Every error is InvalidArgument "<origin>: <key path>: <what>", the origin
// being where the offending value came from (Config::origins: a file
// position "f.yaml:12:19", "flag --mig-strategy", "environment variable
// MIG_STRATEGY") and left out for a default. Example:
//   "c.yaml:9:17: sharing.timeSlicing.resources[0].replicas: must be >= 2, got
//   1"
// The first broken rule is reported.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "src/base/config/config.h"

namespace gpulet::config {

// At most this many replicas per device: a GPU advertised more often would
// make the kubelet's device list unwieldy, and nobody shares that finely.
inline constexpr int kMaxReplicas = 1024;

// sharing.memory limits. Each memory unit is one device in the kubelet's
// list, and the list travels in one gRPC message (4 MiB by default): 32768
// devices of about 70 bytes each stay well below it.
inline constexpr int kMaxMemoryDevicesPerNode = 32768;
inline constexpr int64_t kMaxMemoryUnitMib = int64_t{1} << 20;

// Rules about one value at a time:
// - version is "v1";
// - deviceListStrategy names at least one strategy;
// - cdiAnnotationPrefix is a DNS subdomain followed by '/';
// - driver root, dev root, MPS root, container driver root, nvidia-ctk path
//   and kubelet socket are absolute paths (or empty where empty means unset);
// - resource names and renames are "nvidia.com/<DNS subdomain>", at most 63
//   characters; patterns are non-empty;
// - each sharing section lists resources, without repeating a name or an
//   advertised name; replicas in [2, kMaxReplicas]; devices a count >= 1
//   or GPU indexes, MIG indexes (i:j) and GPU-/MIG- UUIDs;
// - sharing.memory: a resource name "<domain>/<name>", a unit in
//   [1MiB, 1024GiB], devices all, a count or GPU indexes and GPU- UUIDs,
//   maxDevicesPerNode in [1, kMaxMemoryDevicesPerNode], pendingTimeout at
//   least 1s, resyncPeriod at least 10s;
// - imex.channelIDs is [] or [0];
// - passthrough: devices selects something, sysRoot and devRoot absolute,
//   hostDevRoot and pciIds absolute or empty, resyncPeriod at least 1s.
absl::Status ValidateValues(const Config& config);

// ValidateValues, then the rules that tie values together:
// - sharing.mps and sharing.timeSlicing are not both set (NVIDIA would
//   quietly ignore timeSlicing);
// - MPS is refused with migStrategy mixed, as NVIDIA refuses it;
// - MPS needs mpsRoot.
absl::Status Validate(const Config& config);

}  // namespace gpulet::config
