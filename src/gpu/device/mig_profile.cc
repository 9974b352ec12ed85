#include "src/gpu/device/mig_profile.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::device {

uint64_t MigMemorySizeGb(uint64_t device_memory_bytes, uint64_t mig_memory_mb) {
  if (device_memory_bytes == 0) return 0;
  constexpr double kEighths = 8.0;
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  // Floating point on purpose: NVIDIA's rounding is defined in float64 and
  // names must agree with theirs bit for bit.
  double fraction = static_cast<double>(mig_memory_mb) * kMiB /
                    static_cast<double>(device_memory_bytes);
  fraction = std::ceil(fraction * kEighths) / kEighths;
  const double total_gb =
      static_cast<double>((device_memory_bytes + kGiB - 1) / kGiB);
  return static_cast<uint64_t>(std::round(fraction * total_gb));
}

std::string MigProfileName(unsigned gi_slices, unsigned ci_slices,
                           uint64_t mig_memory_mb, uint64_t device_memory_bytes,
                           const std::vector<std::string>& attributes) {
  const uint64_t gb = MigMemorySizeGb(device_memory_bytes, mig_memory_mb);
  std::string name =
      ci_slices == gi_slices
          ? absl::StrCat(gi_slices, "g.", gb, "gb")
          : absl::StrCat(ci_slices, "c.", gi_slices, "g.", gb, "gb");
  std::vector<std::string> with;
  std::vector<std::string> without;
  for (const std::string& attribute : attributes) {
    if (!attribute.empty() && attribute[0] == '-') {
      without.push_back(attribute.substr(1));
    } else {
      with.push_back(attribute);
    }
  }
  // go-nvlib prints one group only; a profile never has both.
  if (!without.empty()) {
    absl::StrAppend(&name, "-", absl::StrJoin(without, ","));
  } else if (!with.empty()) {
    absl::StrAppend(&name, "+", absl::StrJoin(with, ","));
  }
  return name;
}

std::vector<std::string> MigProfileAttributes(unsigned gi_profile_id) {
  switch (gi_profile_id) {
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1:
      return {"me"};
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
      return {"me.all"};
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX:
      return {"gfx"};
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
      return {"-me"};
    default:
      return {};
  }
}

}  // namespace gpulet::device
