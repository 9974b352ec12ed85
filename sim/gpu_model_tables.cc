#include "sim/gpu_model_tables.h"

#include <utility>

namespace gpulet::sim::models {

std::vector<GpuInstanceProfile> GiTable(const std::vector<GiRow>& rows) {
  std::vector<GpuInstanceProfile> out;
  for (const GiRow& r : rows) {
    GpuInstanceProfile p;
    p.id = r.id;
    p.profile_id = r.profile_id;
    p.name = r.name;
    p.slice_count = r.slices;
    p.instance_count = r.instances;
    p.multiprocessor_count = r.sms;
    p.copy_engine_count = r.ce;
    p.decoder_count = r.dec;
    p.encoder_count = r.enc;
    p.jpeg_count = r.jpeg;
    p.ofa_count = r.ofa;
    p.memory_size_mb = r.memory_mib;
    p.placement_starts = r.starts;
    p.placement_size = r.placement_size;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<ComputeInstanceProfile> CiRows(const std::vector<CiRow>& rows) {
  std::vector<ComputeInstanceProfile> out;
  for (const CiRow& r : rows) {
    ComputeInstanceProfile p;
    p.id = r.id;
    p.slice_count = r.slices;
    p.instance_count = r.instances;
    p.multiprocessor_count = r.sms;
    out.push_back(p);
  }
  return out;
}

std::vector<ComputeInstanceProfile> CiTable(unsigned sms_per_slice,
                                            unsigned sms_3c, unsigned sms_7c) {
  return CiRows({
      {NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 1, 7, sms_per_slice},
      {NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 2, 3, 2 * sms_per_slice},
      {NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, 3, 2, sms_3c},
      {NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 4, 1, 4 * sms_per_slice},
      {NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE, 7, 1, sms_7c},
  });
}

}  // namespace gpulet::sim::models
