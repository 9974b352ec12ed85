// Where the MPS control daemon of a GPU sharing memory keeps its pipes and
// logs, on the host and as a container sees them, and the limit a client
// is given (docs/sharing.md "MPS"). The plugin's Allocate answer and the
// daemon supervisor both take their paths from here, so they cannot
// disagree. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

// <mps_root>/<uuid>/pipe and <mps_root>/<uuid>/log on the host.
std::string MpsHostPipeDir(std::string_view mps_root, std::string_view uuid);
std::string MpsHostLogDir(std::string_view mps_root, std::string_view uuid);
// /mps/<uuid>/pipe inside a container.
std::string MpsContainerPipeDir(std::string_view uuid);
// <mps_root>/shm: the /dev/shm the daemons and their clients share.
std::string MpsHostShmDir(std::string_view mps_root);
// "0=<mib>M": the container sees its one GPU as device 0.
std::string MpsPinnedMemLimit(int64_t mib);
// A container's share of the GPU's threads in percent: `units` of
// `gpu_units`, rounded up, 1 to 100.
int MpsActiveThreadPercentage(int64_t units, int64_t gpu_units);

}  // namespace gpulet::sharing
