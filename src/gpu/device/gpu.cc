#include "src/gpu/device/gpu.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::device {

std::string CudaVersionString(int cuda_driver_version) {
  if (cuda_driver_version <= 0) return "";
  return absl::StrCat(cuda_driver_version / 1000, ".",
                      (cuda_driver_version % 1000) / 10);
}

std::string ArchitectureName(unsigned nvml_architecture) {
  switch (nvml_architecture) {
    case NVML_DEVICE_ARCH_KEPLER:
      return "Kepler";
    case NVML_DEVICE_ARCH_MAXWELL:
      return "Maxwell";
    case NVML_DEVICE_ARCH_PASCAL:
      return "Pascal";
    case NVML_DEVICE_ARCH_VOLTA:
      return "Volta";
    case NVML_DEVICE_ARCH_TURING:
      return "Turing";
    case NVML_DEVICE_ARCH_AMPERE:
      return "Ampere";
    case NVML_DEVICE_ARCH_ADA:
      return "Ada";
    case NVML_DEVICE_ARCH_HOPPER:
      return "Hopper";
    case NVML_DEVICE_ARCH_BLACKWELL:
      return "Blackwell";
    case NVML_DEVICE_ARCH_T23X:
      return "Orin";
    case NVML_DEVICE_ARCH_RUBIN:
      return "Rubin";
    default:
      return "Unknown";
  }
}

std::string BrandName(unsigned nvml_brand) {
  // Indexed by nvmlBrandType_t.
  static constexpr std::array<const char*, NVML_BRAND_COUNT> kNames = {
      "Unknown",    "Quadro",     "Tesla",      "NVS",
      "Grid",       "GeForce",    "Titan",      "NVIDIA VApps",
      "NVIDIA VPC", "NVIDIA VCS", "NVIDIA VWS", "NVIDIA Cloud Gaming",
      "Quadro RTX", "NVIDIA RTX", "NVIDIA",     "GeForce RTX",
      "Titan RTX"};
  return nvml_brand < kNames.size() ? kNames[nvml_brand] : "Unknown";
}

}  // namespace gpulet::device
