#include "src/gpu/vfio/bind_plan.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::vfio {
namespace {

using ::testing::HasSubstr;

PciFunction Fn(const std::string& address, uint16_t vendor, uint32_t class_code,
               const std::string& driver) {
  PciFunction fn;
  fn.address = address;
  fn.vendor = vendor;
  fn.device = 0x1234;
  fn.class_code = class_code;
  fn.driver = driver;
  fn.iommu_group = 17;
  return fn;
}

Gpu GpuWith(const std::string& driver, std::vector<PciFunction> others) {
  Gpu gpu;
  gpu.function = Fn("0000:3b:00.0", 0x10de, 0x030200, driver);
  gpu.group = std::move(others);
  gpu.group.push_back(gpu.function);
  return gpu;
}

std::vector<std::string> Lines(const BindPlan& plan) {
  std::vector<std::string> out;
  for (const SysfsWrite& w : plan.writes) {
    out.push_back(w.value + " > " + w.path.string());
  }
  return out;
}

const Roots kRoots{"/s", "/d"};

TEST(PlanBindTest, CompanionsFirstThenGpuBridgeStays) {
  Gpu gpu = GpuWith("nvidia",
                    {Fn("0000:3a:00.0", 0x1000, 0x060400, "pcieport"),
                     Fn("0000:3b:00.1", 0x10de, 0x040300, "snd_hda_intel")});
  absl::StatusOr<BindPlan> plan = PlanBind(kRoots, gpu);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Lines(*plan),
              ::testing::ElementsAre(
                  "vfio-pci > /s/bus/pci/devices/0000:3b:00.1/driver_override",
                  "0000:3b:00.1 > /s/bus/pci/drivers/snd_hda_intel/unbind",
                  "0000:3b:00.1 > /s/bus/pci/drivers_probe",
                  "vfio-pci > /s/bus/pci/devices/0000:3b:00.0/driver_override",
                  "0000:3b:00.0 > /s/bus/pci/drivers/nvidia/unbind",
                  "0000:3b:00.0 > /s/bus/pci/drivers_probe"));
  EXPECT_EQ(plan->previous.at("0000:3b:00.1"), "snd_hda_intel");
  EXPECT_EQ(plan->previous.at("0000:3b:00.0"), "nvidia");
  EXPECT_FALSE(plan->previous.contains("0000:3a:00.0"));
  EXPECT_TRUE(plan->writes[2].wait);
  EXPECT_EQ(plan->writes[2].expect_driver, "vfio-pci");
}

TEST(PlanBindTest, AlreadyBoundIsEmpty) {
  absl::StatusOr<BindPlan> plan = PlanBind(
      kRoots,
      GpuWith("vfio-pci", {Fn("0000:3b:00.1", 0x10de, 0x040300, "vfio-pci")}));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->writes.empty());
}

TEST(PlanBindTest, UnboundFunctionIsProbedWithoutUnbind) {
  absl::StatusOr<BindPlan> plan = PlanBind(kRoots, GpuWith("", {}));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->writes.size(), 2u);
}

TEST(PlanBindTest, RefusesAForeignDeviceTheHostUses) {
  absl::StatusOr<BindPlan> plan = PlanBind(
      kRoots,
      GpuWith("nvidia", {Fn("0000:3c:00.0", 0x144d, 0x010802, "nvme")}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("GPU 0000:3b:00.0: refusing to bind IOMMU group 17: it "
                        "also holds 0000:3c:00.0 (144d:1234, class 0x010802), "
                        "which the host uses through nvme"));
}

TEST(PlanBindTest, ForeignDeviceWithoutDriverMovesToo) {
  absl::StatusOr<BindPlan> plan = PlanBind(
      kRoots, GpuWith("vfio-pci", {Fn("0000:3c:00.0", 0x8086, 0x020000, "")}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->writes.size(), 2u);
}

TEST(PlanBindTest, SharedGroupNotesTheOtherGpu) {
  absl::StatusOr<BindPlan> plan = PlanBind(
      kRoots,
      GpuWith("nvidia", {Fn("0000:3c:00.0", 0x10de, 0x030200, "nvidia")}));
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_EQ(plan->notes[0],
            "also binds GPU 0000:3c:00.0: it shares IOMMU group 17");
}

TEST(PlanBindTest, NoGroup) {
  Gpu gpu = GpuWith("nvidia", {});
  gpu.function.iommu_group = -1;
  absl::StatusOr<BindPlan> plan = PlanBind(kRoots, gpu);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(
      std::string(plan.status().message()),
      HasSubstr("/s/bus/pci/devices/0000:3b:00.0/iommu_group is missing"));
}

TEST(PlanUnbindTest, GpuFirstBackToRememberedOrProbed) {
  Gpu gpu =
      GpuWith("vfio-pci", {Fn("0000:3b:00.1", 0x10de, 0x040300, "vfio-pci"),
                           Fn("0000:3b:00.2", 0x10de, 0x0c0330, "vfio-pci")});
  BindPlan plan = PlanUnbind(
      kRoots, gpu, {{"0000:3b:00.0", "nvidia"}, {"0000:3b:00.2", ""}});
  EXPECT_THAT(Lines(plan),
              ::testing::ElementsAre(
                  " > /s/bus/pci/devices/0000:3b:00.0/driver_override",
                  "0000:3b:00.0 > /s/bus/pci/drivers/vfio-pci/unbind",
                  "0000:3b:00.0 > /s/bus/pci/drivers/nvidia/bind",
                  " > /s/bus/pci/devices/0000:3b:00.2/driver_override",
                  "0000:3b:00.2 > /s/bus/pci/drivers/vfio-pci/unbind",
                  " > /s/bus/pci/devices/0000:3b:00.1/driver_override",
                  "0000:3b:00.1 > /s/bus/pci/drivers/vfio-pci/unbind",
                  "0000:3b:00.1 > /s/bus/pci/drivers_probe"));
  EXPECT_TRUE(plan.writes.back().any_driver);
  EXPECT_TRUE(PlanUnbind(kRoots, GpuWith("nvidia", {}), {}).writes.empty());
}

}  // namespace
}  // namespace gpulet::vfio
