#include "src/device/gpu.h"

#include "gtest/gtest.h"
#include "src/nvml/nvml_api.h"

namespace gpulet::device {
namespace {

TEST(GpuTest, CudaVersionString) {
  EXPECT_EQ(CudaVersionString(12040), "12.4");
  EXPECT_EQ(CudaVersionString(11080), "11.8");
  EXPECT_EQ(CudaVersionString(12000), "12.0");
  EXPECT_EQ(CudaVersionString(0), "");
}

TEST(GpuTest, ArchitectureAndBrandNames) {
  EXPECT_EQ(ArchitectureName(NVML_DEVICE_ARCH_HOPPER), "Hopper");
  EXPECT_EQ(ArchitectureName(NVML_DEVICE_ARCH_AMPERE), "Ampere");
  EXPECT_EQ(ArchitectureName(NVML_DEVICE_ARCH_UNKNOWN), "Unknown");
  EXPECT_EQ(ArchitectureName(42), "Unknown");
  EXPECT_EQ(BrandName(NVML_BRAND_TESLA), "Tesla");
  EXPECT_EQ(BrandName(NVML_BRAND_NVIDIA), "NVIDIA");
  EXPECT_EQ(BrandName(NVML_BRAND_TITAN_RTX), "Titan RTX");
  EXPECT_EQ(BrandName(NVML_BRAND_COUNT), "Unknown");
}

}  // namespace
}  // namespace gpulet::device
