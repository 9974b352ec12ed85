// H200 and the Blackwell models. Sources and what could not be checked:
//  - MIG profile names, instance counts, copy engines and media engines come
//    from NVIDIA's MIG user guide (v580, "Supported MIG Profiles": H200,
//    B200, RTX PRO 6000 Blackwell). GB200 uses B200's table with the names
//    its larger memory gives (1g.23gb, 1g.47gb, 3g.93gb, 7g.186gb).
//  - Memory totals and per-profile MiB, SM counts per profile, PCI
//    subsystem IDs and the nvidia-smi profile IDs of the RTX PRO 6000
//    attribute profiles are plausible values, not read off hardware; the
//    per-profile memory is chosen so go-nvlib's naming rule gives the
//    documented names (checked by profiles_test).
#include "sim/gpu_model_tables.h"
#include "sim/gpu_models.h"

namespace gpulet::sim::models {
namespace {

const std::vector<unsigned> kPairStarts = {0, 2, 4, 6};

// The Hopper/Blackwell seven-slice layout: per profile the memory in MiB of
// one, two and four eighths and of the whole GPU, and SMs per slice.
struct SevenSlice {
  const char* n1;   // "1g.23gb"
  const char* n1m;  // "1g.23gb+me"
  const char* n1d;  // "1g.45gb" (double memory)
  const char* n2;
  const char* n3;
  const char* n4;
  const char* n7;
  uint64_t mib1, mib2, mib4, mib7;
  unsigned sm1, sm1d, sm2, sm3, sm4, sm7;
  // Copy engines per profile: 1g, 2g, 3g, 4g, 7g.
  unsigned ce1, ce2, ce3, ce4, ce7;
};

// Blackwell's guide table: one NVDEC and one JPEG in every profile; OFA in
// +me and 7g only.
std::vector<GpuInstanceProfile> BlackwellTable(const SevenSlice& t) {
  // clang-format off
  return GiTable({
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, t.n1, 1, 7, t.sm1, t.ce1, 1, 0,
       1, 0, t.mib1, kOneSliceStarts, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, t.n1m, 1, 1, t.sm1, t.ce1,
       1, 0, 1, 1, t.mib1, kOneSliceStarts, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, t.n1d, 1, 4, t.sm1d, t.ce1,
       1, 0, 1, 0, t.mib2, kPairStarts, 2},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, t.n2, 2, 3, t.sm2, t.ce2, 1, 0, 1,
       0, t.mib2, {0, 2, 4}, 2},
      {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, t.n3, 3, 2, t.sm3, t.ce3, 1, 0, 1,
       0, t.mib4, {0, 4}, 4},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, t.n4, 4, 1, t.sm4, t.ce4, 1, 0, 1,
       0, t.mib4, {0}, 4},
      {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, t.n7, 7, 1, t.sm7, t.ce7, 1, 0, 1,
       1, t.mib7, {0}, 8},
  });
  // clang-format on
}

GpuModel Blackwell(const char* key, const char* name, uint32_t pci_device_id,
                   uint64_t memory_mib) {
  GpuModel m;
  m.key = key;
  m.name = name;
  m.pci_device_id = pci_device_id;
  m.pci_subsystem_id = 0x1A0010DE;
  m.memory_total = memory_mib * kMiB;
  m.cc_major = 10;
  m.architecture = NVML_DEVICE_ARCH_BLACKWELL;
  m.brand = NVML_BRAND_NVIDIA;
  m.multiprocessor_count = 148;
  m.mig_capable = true;
  m.max_mig_devices = 7;
  m.ci_profiles = CiTable(18, 54, 148);
  return m;
}

}  // namespace

GpuModel H200Sxm() {
  GpuModel m;
  m.key = "H200-SXM5-141GB";
  m.name = "NVIDIA H200";
  m.pci_device_id = 0x233510DE;
  m.pci_subsystem_id = 0x18BE10DE;
  m.memory_total = 143771 * kMiB;
  m.cc_major = 9;
  m.architecture = NVML_DEVICE_ARCH_HOPPER;
  m.brand = NVML_BRAND_NVIDIA;
  m.multiprocessor_count = 132;
  m.mig_capable = true;
  m.max_mig_devices = 7;
  // The guide's H200 table: as H100, with 1g.18gb ... 7g.141gb.
  // clang-format off
  m.gi_profiles = GiTable({
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.18gb", 1, 7, 16, 1, 1, 0, 1,
       0, 17664, kOneSliceStarts, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.18gb+me", 1, 1, 16, 1, 1,
       0, 1, 1, 17664, kOneSliceStarts, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, "1g.35gb", 1, 4, 26, 1, 1, 0,
       1, 0, 35584, kPairStarts, 2},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, "2g.35gb", 2, 3, 32, 2, 2, 0, 2, 0,
       35584, {0, 2, 4}, 2},
      {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, "3g.71gb", 3, 2, 60, 3, 3, 0, 3, 0,
       71424, {0, 4}, 4},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, "4g.71gb", 4, 1, 64, 4, 4, 0, 4, 0,
       71424, {0}, 4},
      {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, "7g.141gb", 7, 1, 132, 8, 7, 0, 7,
       1, 143104, {0}, 8},
  });
  // clang-format on
  m.ci_profiles = CiTable(16, 60, 132);
  return m;
}

GpuModel B200() {
  GpuModel m = Blackwell("B200", "NVIDIA B200", 0x290110DE, 183359);
  m.gi_profiles = BlackwellTable({"1g.23gb",  "1g.23gb+me",
                                  "1g.45gb",  "2g.45gb",
                                  "3g.90gb",  "4g.90gb",
                                  "7g.180gb", 22272,
                                  44800,      90112,
                                  180480,     18,
                                  18,         36,
                                  54,         72,
                                  148,        2,
                                  3,          6,
                                  8,          16});
  return m;
}

GpuModel GB200() {
  GpuModel m = Blackwell("GB200", "NVIDIA GB200", 0x294110DE, 189471);
  m.gi_profiles = BlackwellTable({"1g.23gb",  "1g.23gb+me",
                                  "1g.47gb",  "2g.47gb",
                                  "3g.93gb",  "4g.93gb",
                                  "7g.186gb", 23040,
                                  46592,      93184,
                                  186880,     18,
                                  18,         36,
                                  54,         72,
                                  148,        2,
                                  3,          6,
                                  8,          16});
  return m;
}

// Four slices; the guide's table lists every attribute profile NVML 13
// names: +me (1_SLICE_REV1), +gfx (*_GFX), +me.all (*_ALL_ME), -me (*_NO_ME).
GpuModel RtxPro6000Bse() {
  GpuModel m;
  m.key = "RTX-PRO-6000-BSE";
  m.name = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
  m.pci_device_id = 0x2BB510DE;
  m.pci_subsystem_id = 0x204E10DE;
  m.memory_total = 97887 * kMiB;
  m.cc_major = 12;
  m.architecture = NVML_DEVICE_ARCH_BLACKWELL;
  m.brand = NVML_BRAND_NVIDIA_RTX;
  m.multiprocessor_count = 188;
  m.mig_capable = true;
  m.max_mig_devices = 4;
  const std::vector<unsigned> one = {0, 1, 2, 3};
  const std::vector<unsigned> two = {0, 2};
  // {id, nvidia-smi ID, name, slices, instances, SMs, CE, NVDEC, NVENC,
  //  JPEG, OFA, MiB, placements, placement size}
  // clang-format off
  m.gi_profiles = GiTable({
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 14, "1g.24gb", 1, 4, 46, 1, 1, 1, 1,
       0, 24064, one, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 21, "1g.24gb+me", 1, 1, 46, 1, 1,
       1, 1, 1, 24064, one, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX, 47, "1g.24gb+gfx", 1, 4, 46, 1,
       1, 1, 1, 0, 24064, one, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, 67, "1g.24gb+me.all", 1, 1, 46,
       1, 4, 4, 4, 1, 24064, one, 1},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, 44, "1g.24gb-me", 1, 4, 46, 1,
       0, 0, 0, 0, 24064, one, 1},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 5, "2g.48gb", 2, 2, 94, 2, 2, 2, 2, 0,
       48896, two, 2},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX, 35, "2g.48gb+gfx", 2, 2, 94, 2, 2,
       2, 2, 0, 48896, two, 2},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME, 65, "2g.48gb+me.all", 2, 1, 94,
       2, 4, 4, 4, 1, 48896, two, 2},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME, 64, "2g.48gb-me", 2, 2, 94, 2,
       0, 0, 0, 0, 48896, two, 2},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 0, "4g.96gb", 4, 1, 188, 4, 4, 4, 4,
       1, 97280, {0}, 4},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX, 32, "4g.96gb+gfx", 4, 1, 188, 4,
       4, 4, 4, 1, 97280, {0}, 4},
  });
  // clang-format on
  m.ci_profiles = CiRows({
      {NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 1, 4, 46},
      {NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 2, 2, 94},
      {NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 4, 1, 188},
  });
  return m;
}

}  // namespace gpulet::sim::models
