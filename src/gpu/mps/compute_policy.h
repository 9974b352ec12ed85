// A GPU's time-slice, the compute policy NVIDIA's driver offers for
// processes that share a GPU by time (`nvidia-smi compute-policy
// --set-timeslice`), and its compute mode (`nvidia-smi -c`), which
// sharing.mps sets to EXCLUSIVE_PROCESS while the GPU's MPS control daemon
// runs. NVML's public API has no call for the time-slice on bare metal
// (its scheduler calls are vGPU's), and gpulet's NVML seam does not carry
// nvmlDeviceSetComputeMode, so gpulet runs the driver's nvidia-smi for
// both, as NVIDIA's DRA driver and mps-control-daemon do.
//
// Thread safety: pure functions, except SetTimeslice and SetComputeMode,
// which run a process and may be called from any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gpulet::mps {

// nvidia-smi's levels: DEFAULT 0, SHORT 1, MEDIUM 2, LONG 3.
// "Default", "Short", "Medium", "Long" (DRA's timeSlicingConfig.interval);
// nullopt for anything else.
std::optional<int> TimesliceLevel(const std::string& interval);

// {nvidia_smi, "compute-policy", "-i", uuid, "--set-timeslice=<level>"}.
std::vector<std::string> TimesliceCommand(const std::string& nvidia_smi,
                                          const std::string& uuid, int level);

// Runs TimesliceCommand; an error names the GPU and how nvidia-smi ended.
absl::Status SetTimeslice(const std::string& nvidia_smi,
                          const std::string& uuid, int level,
                          absl::Duration timeout = absl::Seconds(30));

// nvidia-smi's compute modes as `-c` takes them.
inline constexpr char kComputeModeDefault[] = "DEFAULT";
inline constexpr char kComputeModeExclusiveProcess[] = "EXCLUSIVE_PROCESS";

// {nvidia_smi, "-i", uuid, "-c", mode}.
std::vector<std::string> ComputeModeCommand(const std::string& nvidia_smi,
                                            const std::string& uuid,
                                            const std::string& mode);

// Runs ComputeModeCommand; an error names the GPU, the mode and how
// nvidia-smi ended.
absl::Status SetComputeMode(const std::string& nvidia_smi,
                            const std::string& uuid, const std::string& mode,
                            absl::Duration timeout = absl::Seconds(30));

}  // namespace gpulet::mps
