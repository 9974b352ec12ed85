// Test helpers for the tests of the built-in machine profiles and machine
// files (profiles_test.cc, profiles_mig_test.cc, machine_file_test.cc):
// loading a machine, counting a GPU's NVLinks, and the MIG profile names
// NVIDIA derives from a profile's size.
#pragma once

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/machine.h"
#include "sim/profiles.h"

namespace gpulet::sim::test_machines {

// A built-in profile or a machine file, loaded; an empty Machine (and a
// test failure) when it does not load.
inline Machine Load(const std::string& spec) {
  absl::StatusOr<Machine> m = LoadMachine(spec);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Machine{};
}

// How many of the GPU's NVLinks go to a device of `type`.
inline size_t LinksOfType(const Gpu& gpu, nvmlIntNvLinkDeviceType_t type) {
  size_t n = 0;
  for (const NvLink& link : gpu.nvlinks) n += link.remote_type == type;
  return n;
}

// The bus IDs of the NVSwitches the GPU has links to.
inline std::set<std::string> SwitchBusIds(const Gpu& gpu) {
  std::set<std::string> ids;
  for (const NvLink& link : gpu.nvlinks) {
    if (link.remote_type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
      ids.insert(link.remote_bus_id);
    }
  }
  return ids;
}

// go-nvlib's rule for the memory part of a MIG profile name: the MIG
// memory as a fraction of the GPU rounded up to eighths, times the GPU's
// memory in whole GiB (rounded up), rounded to the nearest integer.
inline uint64_t MigMemoryGb(uint64_t device_bytes, uint64_t mig_mib) {
  double fraction = static_cast<double>(mig_mib << 20) / device_bytes;
  fraction = std::ceil(fraction * 8) / 8;
  uint64_t total_gb = (device_bytes + (uint64_t{1} << 30) - 1) >> 30;
  return static_cast<uint64_t>(std::round(fraction * total_gb));
}

// The name NVIDIA gives GPU instance profile `p` on `gpu`.
inline std::string DerivedName(const Gpu& gpu, const GpuInstanceProfile& p) {
  std::string name =
      absl::StrCat(p.slice_count, "g.",
                   MigMemoryGb(gpu.memory_total, p.memory_size_mb), "gb");
  switch (p.id) {
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1:
      return name + "+me";
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
      return name + "+me.all";
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
      return name + "-me";
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX:
      return name + "+gfx";
    default:
      return name;
  }
}

// The profile name of each of the GPU's MIG devices, in order.
inline std::vector<std::string> MigProfileNames(const Gpu& gpu) {
  std::vector<std::string> names;
  for (const MigDevice& d : gpu.mig_devices) {
    for (const auto& p : gpu.gi_profiles) {
      if (p.id == d.gpu_instance_profile_id) names.push_back(p.name);
    }
  }
  return names;
}

}  // namespace gpulet::sim::test_machines
