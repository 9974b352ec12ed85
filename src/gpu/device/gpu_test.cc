#include "src/gpu/device/gpu.h"

#include "gtest/gtest.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::device {
namespace {

TEST(GpuTest, CudaVersionString) {
  EXPECT_EQ(CudaVersionString(12040), "12.4");
  EXPECT_EQ(CudaVersionString(11080), "11.8");
  EXPECT_EQ(CudaVersionString(12000), "12.0");
  EXPECT_EQ(CudaVersionString(0), "");
}

// Every architecture value nvml.h 13 defines for GPUs gpulet may meet; the
// values are NVIDIA's (Blackwell 10, Orin 11, Rubin 13).
TEST(GpuTest, ArchitectureNamesMatchNvmlValues) {
  struct Case {
    unsigned value;
    const char* name;
  };
  const Case cases[] = {
      {2, "Kepler"},     {3, "Maxwell"},         {4, "Pascal"},   {5, "Volta"},
      {6, "Turing"},     {7, "Ampere"},          {8, "Ada"},      {9, "Hopper"},
      {10, "Blackwell"}, {11, "Orin"},           {12, "Unknown"}, {13, "Rubin"},
      {14, "Unknown"},   {0xFFFFFFFF, "Unknown"}};
  for (const Case& c : cases) {
    EXPECT_EQ(ArchitectureName(c.value), c.name) << c.value;
  }
  EXPECT_EQ(NVML_DEVICE_ARCH_BLACKWELL, 10);
  EXPECT_EQ(NVML_DEVICE_ARCH_RUBIN, 13);
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
