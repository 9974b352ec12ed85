#include "sim/gpu_models.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "sim/gpu_model_tables.h"

namespace gpulet::sim {
namespace {

using models::CiTable;
using models::GiTable;
using models::kMiB;
using models::kOneSliceStarts;

GpuModel A100Sxm4_40GB() {
  GpuModel m;
  m.key = "A100-SXM4-40GB";
  m.name = "NVIDIA A100-SXM4-40GB";
  m.pci_device_id = 0x20B010DE;
  m.pci_subsystem_id = 0x134F10DE;
  m.memory_total = 40960 * kMiB;
  m.cc_major = 8;
  m.architecture = NVML_DEVICE_ARCH_AMPERE;
  m.brand = NVML_BRAND_NVIDIA;
  m.multiprocessor_count = 108;
  m.mig_capable = true;
  m.max_mig_devices = 7;
  m.gi_profiles = GiTable({
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.5gb", 1, 7, 14, 1, 0, 0, 0, 0,
       4864, kOneSliceStarts, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.5gb+me", 1, 1, 14, 1, 1,
       0, 1, 1, 4864, kOneSliceStarts, 1},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE,
       14,
       "2g.10gb",
       2,
       3,
       28,
       2,
       1,
       0,
       0,
       0,
       9984,
       {0, 2, 4},
       2},
      {NVML_GPU_INSTANCE_PROFILE_3_SLICE,
       9,
       "3g.20gb",
       3,
       2,
       42,
       3,
       2,
       0,
       0,
       0,
       20096,
       {0, 4},
       4},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE,
       5,
       "4g.20gb",
       4,
       1,
       56,
       4,
       2,
       0,
       0,
       0,
       20096,
       {0},
       4},
      {NVML_GPU_INSTANCE_PROFILE_7_SLICE,
       0,
       "7g.40gb",
       7,
       1,
       98,
       7,
       5,
       0,
       1,
       1,
       40320,
       {0},
       8},
  });
  m.ci_profiles = CiTable(14, 42, 98);
  return m;
}

GpuModel A100Sxm4_80GB() {
  GpuModel m = A100Sxm4_40GB();
  m.key = "A100-SXM4-80GB";
  m.name = "NVIDIA A100-SXM4-80GB";
  m.pci_device_id = 0x20B210DE;
  m.pci_subsystem_id = 0x147F10DE;
  m.memory_total = 81920 * kMiB;
  m.gi_profiles = GiTable({
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.10gb", 1, 7, 14, 1, 0, 0, 0,
       0, 9728, kOneSliceStarts, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.10gb+me", 1, 1, 14, 1, 1,
       0, 1, 1, 9728, kOneSliceStarts, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2,
       15,
       "1g.20gb",
       1,
       4,
       14,
       1,
       1,
       0,
       0,
       0,
       19968,
       {0, 2, 4, 6},
       2},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE,
       14,
       "2g.20gb",
       2,
       3,
       28,
       2,
       2,
       0,
       0,
       0,
       19968,
       {0, 2, 4},
       2},
      {NVML_GPU_INSTANCE_PROFILE_3_SLICE,
       9,
       "3g.40gb",
       3,
       2,
       42,
       3,
       3,
       0,
       0,
       0,
       40192,
       {0, 4},
       4},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE,
       5,
       "4g.40gb",
       4,
       1,
       56,
       4,
       4,
       0,
       0,
       0,
       40192,
       {0},
       4},
      {NVML_GPU_INSTANCE_PROFILE_7_SLICE,
       0,
       "7g.80gb",
       7,
       1,
       98,
       7,
       5,
       0,
       1,
       1,
       80896,
       {0},
       8},
  });
  return m;
}

GpuModel H100Sxm5_80GB() {
  GpuModel m;
  m.key = "H100-SXM5-80GB";
  m.name = "NVIDIA H100 80GB HBM3";
  m.pci_device_id = 0x233010DE;
  m.pci_subsystem_id = 0x16C110DE;
  m.memory_total = 81559 * kMiB;
  m.cc_major = 9;
  m.architecture = NVML_DEVICE_ARCH_HOPPER;
  m.brand = NVML_BRAND_NVIDIA;
  m.multiprocessor_count = 132;
  m.mig_capable = true;
  m.max_mig_devices = 7;
  m.gi_profiles = GiTable({
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.10gb", 1, 7, 16, 1, 1, 0, 1,
       0, 9984, kOneSliceStarts, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.10gb+me", 1, 1, 16, 1, 1,
       0, 1, 1, 9984, kOneSliceStarts, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2,
       15,
       "1g.20gb",
       1,
       4,
       26,
       1,
       1,
       0,
       1,
       0,
       20096,
       {0, 2, 4, 6},
       2},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE,
       14,
       "2g.20gb",
       2,
       3,
       32,
       2,
       2,
       0,
       2,
       0,
       20096,
       {0, 2, 4},
       2},
      {NVML_GPU_INSTANCE_PROFILE_3_SLICE,
       9,
       "3g.40gb",
       3,
       2,
       60,
       3,
       3,
       0,
       3,
       0,
       40448,
       {0, 4},
       4},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE,
       5,
       "4g.40gb",
       4,
       1,
       64,
       4,
       4,
       0,
       4,
       0,
       40448,
       {0},
       4},
      {NVML_GPU_INSTANCE_PROFILE_7_SLICE,
       0,
       "7g.80gb",
       7,
       1,
       132,
       8,
       7,
       0,
       7,
       1,
       81152,
       {0},
       8},
  });
  m.ci_profiles = CiTable(16, 60, 132);
  return m;
}

GpuModel TeslaT4() {
  GpuModel m;
  m.key = "T4";
  m.name = "Tesla T4";
  m.pci_device_id = 0x1EB810DE;
  m.pci_subsystem_id = 0x12A210DE;
  m.memory_total = 15360 * kMiB;
  m.cc_major = 7;
  m.cc_minor = 5;
  m.architecture = NVML_DEVICE_ARCH_TURING;
  m.brand = NVML_BRAND_NVIDIA;
  m.multiprocessor_count = 40;
  return m;
}

}  // namespace

const std::vector<GpuModel>& GpuModels() {
  static const std::vector<GpuModel> all = {
      A100Sxm4_40GB(),         A100Sxm4_80GB(), H100Sxm5_80GB(),
      models::H200Sxm(),       models::B200(),  models::GB200(),
      models::RtxPro6000Bse(), TeslaT4()};
  return all;
}

const GpuModel* FindGpuModel(absl::string_view key_or_name) {
  for (const GpuModel& m : GpuModels()) {
    if (absl::EqualsIgnoreCase(m.key, key_or_name) ||
        absl::EqualsIgnoreCase(m.name, key_or_name)) {
      return &m;
    }
  }
  return nullptr;
}

std::string GpuModelKeys() {
  std::vector<std::string> keys;
  for (const GpuModel& m : GpuModels()) keys.push_back(m.key);
  return absl::StrJoin(keys, ", ");
}

}  // namespace gpulet::sim
