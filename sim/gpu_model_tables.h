// Helpers for writing GPU model tables (gpu_models*.cc): one row of
// `nvidia-smi mig -lgip` becomes a GpuInstanceProfile, and the compute
// instance profiles of the usual seven-slice layout are derived from three
// SM counts.
//
// Internal to gpulet_sim_model; pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/machine.h"

namespace gpulet::sim::models {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;

// One row of `nvidia-smi mig -lgip`. Memory is MiB (nvidia-smi prints GiB
// with two decimals: 4.75 GiB = 4864 MiB).
struct GiRow {
  unsigned id;          // NVML_GPU_INSTANCE_PROFILE_*
  unsigned profile_id;  // nvidia-smi "ID"
  const char* name;
  unsigned slices, instances, sms, ce, dec, enc, jpeg, ofa;
  uint64_t memory_mib;
  std::vector<unsigned> starts;
  unsigned placement_size;
};

std::vector<GpuInstanceProfile> GiTable(const std::vector<GiRow>& rows);

// Compute instance profiles as listed inside a full (7-slice) GPU instance;
// smaller GPU instances offer the rows whose slice count fits.
std::vector<ComputeInstanceProfile> CiTable(unsigned sms_per_slice,
                                            unsigned sms_3c, unsigned sms_7c);

// One compute instance profile: {NVML_COMPUTE_INSTANCE_PROFILE_*, slices,
// instances, SMs}.
struct CiRow {
  unsigned id, slices, instances, sms;
};
std::vector<ComputeInstanceProfile> CiRows(const std::vector<CiRow>& rows);

inline const std::vector<unsigned> kOneSliceStarts = {0, 1, 2, 3, 4, 5, 6};

}  // namespace gpulet::sim::models
