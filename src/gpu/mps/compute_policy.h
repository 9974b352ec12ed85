// A GPU's time-slice, the compute policy NVIDIA's driver offers for
// processes that share a GPU by time (`nvidia-smi compute-policy
// --set-timeslice`). NVML's public API has no call for it on bare metal
// (its scheduler calls are vGPU's), so gpulet runs the driver's nvidia-smi,
// as NVIDIA's DRA driver does.
//
// Thread safety: pure functions, except SetTimeslice, which runs a process
// and may be called from any thread.
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

}  // namespace gpulet::mps
