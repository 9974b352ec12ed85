// Where an MPS control daemon gpulet runs (one per GPU sharing memory, one
// per DRA claim configured for MPS) keeps its pipes, logs and /dev/shm, on
// the host and as a container sees them, and the limit a client is given
// (docs/sharing.md "MPS"). The plugin's Allocate answer, the DRA claim
// specs and the daemons take their paths from here, so they cannot
// disagree. Each daemon has a directory of its own, <mps_root>/<key>/, the
// key a GPU UUID or "claim-<uid>": its clients share its /dev/shm, and
// clients of other daemons do not. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace gpulet::sharing {

// A memory share's size in MiB, as the device plugin's memory shares and
// DRA's consumable-capacity claims tell a container (docs/sharing.md).
inline constexpr char kMemoryLimitEnv[] = "GPULET_GPU_MEMORY_LIMIT";
inline constexpr char kMpsPipeDirectoryEnv[] = "CUDA_MPS_PIPE_DIRECTORY";
inline constexpr char kMpsLogDirectoryEnv[] = "CUDA_MPS_LOG_DIRECTORY";
inline constexpr char kMpsPinnedMemLimitEnv[] =
    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT";
inline constexpr char kMpsActiveThreadPercentageEnv[] =
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";
// The file the control daemon listens on in its pipe directory; its
// appearance is how gpulet knows the daemon is up.
inline constexpr char kMpsControlSocket[] = "control";

// OK when `key` may name a daemon's directory: 1 to 128 letters, digits,
// '-' and '_', so it stays one path component below the MPS root whatever
// a caller passes. InvalidArgument naming the key otherwise.
absl::Status CheckMpsKey(std::string_view key);
// The key of the daemon that serves a sharing.mps replica: the UUID its
// kubelet ID "<uuid>::<n>" shares; empty for an ID without a replica
// suffix.
std::string MpsReplicaKey(std::string_view replica_id);
// <mps_root>/<key>: everything of one daemon; removing it removes them all.
std::string MpsHostDir(std::string_view mps_root, std::string_view key);
// <mps_root>/<key>/pipe and <mps_root>/<key>/log on the host.
std::string MpsHostPipeDir(std::string_view mps_root, std::string_view key);
std::string MpsHostLogDir(std::string_view mps_root, std::string_view key);
// <mps_root>/<key>/shm: the daemon's /dev/shm, which it shares with its
// clients only.
std::string MpsHostShmDir(std::string_view mps_root, std::string_view key);
// /mps/<key>/pipe inside a container.
std::string MpsContainerPipeDir(std::string_view key);
// "<mib>M": a pinned device memory limit as MPS reads one.
std::string MpsMemLimitValue(int64_t mib);
// "0=<mib>M": the container sees its one GPU as device 0.
std::string MpsPinnedMemLimit(int64_t mib);
// Control daemon commands (nvidia-cuda-mps-control's interactive shell)
// setting the defaults of the MPS servers it starts afterwards:
// "set_default_active_thread_percentage <percentage>" and
// "set_default_device_pinned_mem_limit <device> <mib>M", the device a UUID
// or an index among the daemon's CUDA_VISIBLE_DEVICES.
std::string MpsSetDefaultActiveThreadPercentage(int percentage);
std::string MpsSetDefaultPinnedMemLimit(std::string_view device, int64_t mib);
// A container's share of the GPU's threads in percent: `units` of
// `gpu_units`, rounded up, 1 to 100.
int MpsActiveThreadPercentage(int64_t units, int64_t gpu_units);

// sharing.mps: the limits a GPU's control daemon sets for every client, as
// NVIDIA's mps-control-daemon computes them (integer division each step):
// pinned device memory in MiB = memory_bytes / replicas / 1024 / 1024 (0
// when the memory is unknown: no limit), active thread percentage =
// 100 / replicas. `replicas` < 1 counts as 1.
int64_t MpsReplicaPinnedMemMib(uint64_t memory_bytes, int replicas);
int MpsReplicaThreadPercentage(int replicas);
// The control commands that set them on a daemon serving one GPU (which
// it sees as device 0): "set_default_device_pinned_mem_limit 0 <mib>M"
// (left out for 0 MiB), then "set_default_active_thread_percentage <p>".
std::vector<std::string> MpsReplicaLimitCommands(uint64_t memory_bytes,
                                                 int replicas);

}  // namespace gpulet::sharing
