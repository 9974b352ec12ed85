#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio {
namespace {

PciFunction Fn(const std::string& address, uint16_t vendor, uint16_t device,
               uint32_t class_code, const std::string& driver, int group = 17) {
  PciFunction fn;
  fn.address = address;
  fn.vendor = vendor;
  fn.device = device;
  fn.class_code = class_code;
  fn.driver = driver;
  fn.iommu_group = group;
  return fn;
}

Gpu GpuWith(std::vector<PciFunction> others,
            const std::string& driver = "vfio-pci", int group = 17) {
  Gpu gpu;
  gpu.function = Fn("0000:3b:00.0", 0x10de, 0x2330, 0x030200, driver, group);
  gpu.group = std::move(others);
  gpu.group.insert(gpu.group.begin(), gpu.function);
  return gpu;
}

struct Case {
  const char* name;
  Gpu gpu;
  bool viable;
  std::string reason;
};

class ViabilityTest : public ::testing::TestWithParam<Case> {};

TEST_P(ViabilityTest, ReasonNamesTheFunctionAndItsDriver) {
  const Viability v = CheckViability(GetParam().gpu);
  EXPECT_EQ(v.viable, GetParam().viable);
  EXPECT_EQ(v.reason, GetParam().reason);
}

INSTANTIATE_TEST_SUITE_P(
    Groups, ViabilityTest,
    ::testing::Values(
        Case{"AloneOnVfio", GpuWith({}), true, ""},
        Case{
            "CompanionsOnVfio",
            GpuWith({Fn("0000:3b:00.1", 0x10de, 0x22e8, 0x040300, "vfio-pci"),
                     Fn("0000:3b:00.2", 0x10de, 0x1ad8, 0x0c0330, "vfio-pci")}),
            true, ""},
        Case{
            "BridgeMayStay",
            GpuWith({Fn("0000:3a:00.0", 0x1000, 0xc030, 0x060400, "pcieport")}),
            true, ""},
        Case{"AudioOnHostDriver",
             GpuWith({Fn("0000:3b:00.1", 0x10de, 0x22e8, 0x040300,
                         "snd_hda_intel")}),
             false,
             "IOMMU group 17: 0000:3b:00.1 (audio, 10de:22e8) is bound to "
             "snd_hda_intel, not vfio-pci"},
        Case{"GpuStillOnNvidia", GpuWith({}, "nvidia"), false,
             "IOMMU group 17: 0000:3b:00.0 (GPU, 10de:2330) is bound to "
             "nvidia, not vfio-pci"},
        Case{"UnboundCompanion",
             GpuWith({Fn("0000:3b:00.3", 0x10de, 0x1ad9, 0x0c8000, "")}), false,
             "IOMMU group 17: 0000:3b:00.3 (UCSI, 10de:1ad9) is bound to no "
             "driver, not vfio-pci"},
        Case{"ForeignNvme",
             GpuWith({Fn("0000:3c:00.0", 0x144d, 0xa80a, 0x010802, "nvme")}),
             false,
             "IOMMU group 17: 0000:3c:00.0 (NVMe, 144d:a80a) is bound to nvme, "
             "not vfio-pci"},
        Case{"NoGroup", GpuWith({}, "vfio-pci", -1), false,
             "0000:3b:00.0: no IOMMU group (is the IOMMU on? intel_iommu=on "
             "or amd_iommu=on on the kernel command line)"}),
    [](const ::testing::TestParamInfo<Case>& param_info) {
      return std::string(param_info.param.name);
    });

TEST(PciFunctionTest, Predicates) {
  EXPECT_TRUE(Fn("a", 0x10de, 1, 0x030200, "").IsNvidiaGpu());
  EXPECT_TRUE(Fn("a", 0x10de, 1, 0x030000, "").IsNvidiaGpu());
  EXPECT_FALSE(Fn("a", 0x10de, 1, 0x040300, "").IsNvidiaGpu());
  EXPECT_FALSE(Fn("a", 0x1002, 1, 0x030000, "").IsNvidiaGpu());
  EXPECT_TRUE(Fn("a", 0x1000, 1, 0x060400, "").IsBridge());
  EXPECT_FALSE(Fn("a", 0x10de, 1, 0x068000, "").IsBridge());
}

}  // namespace
}  // namespace gpulet::vfio
