// The passthrough spec: one device per GPU bound to vfio-pci, its group
// node (and cdev on an iommufd host), the VFIO container node spec-wide.
#include "src/model/cdi/passthrough_spec.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::cdi {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

vfio::Gpu Gpu(const std::string& address, const std::string& driver, int group,
              const std::string& cdev = "") {
  vfio::Gpu gpu;
  gpu.function.address = address;
  gpu.function.vendor = 0x10de;
  gpu.function.class_code = 0x030200;
  gpu.function.driver = driver;
  gpu.function.iommu_group = group;
  gpu.vfio_cdev = cdev;
  return gpu;
}

std::vector<std::string> Paths(const ContainerEdits& edits) {
  std::vector<std::string> out;
  for (const DeviceNode& n : edits.device_nodes) {
    out.push_back(n.host_path.empty() ? n.path : n.path + "<-" + n.host_path);
  }
  return out;
}

TEST(PassthroughSpecTest, OneDevicePerVfioGpu) {
  vfio::Inventory inv;
  inv.gpus = {Gpu("0000:3b:00.0", "vfio-pci", 17),
              Gpu("0000:5e:00.0", "nvidia", 18),
              Gpu("0000:86:00.0", "vfio-pci", 19)};
  absl::StatusOr<Spec> spec = BuildPassthroughSpec(inv, "nvidia.com", "/dev");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, "nvidia.com/pgpu");
  EXPECT_THAT(Paths(spec->edits), ElementsAre("/dev/vfio/vfio"));
  ASSERT_EQ(spec->devices.size(), 2u);
  EXPECT_EQ(spec->devices[0].name, "0000:3b:00.0");
  EXPECT_THAT(Paths(spec->devices[0].edits), ElementsAre("/dev/vfio/17"));
  EXPECT_EQ(spec->devices[1].name, "0000:86:00.0");
}

TEST(PassthroughSpecTest, IommufdAndAnotherDevRoot) {
  vfio::Inventory inv;
  inv.iommufd = true;
  inv.gpus = {Gpu("0000:3b:00.0", "vfio-pci", 17, "vfio0")};
  absl::StatusOr<Spec> spec =
      BuildPassthroughSpec(inv, "nvidia.com", "/host/dev");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(Paths(spec->edits),
              ElementsAre("/dev/iommu<-/host/dev/iommu",
                          "/dev/vfio/vfio<-/host/dev/vfio/vfio"));
  EXPECT_THAT(Paths(spec->devices[0].edits),
              ElementsAre("/dev/vfio/17<-/host/dev/vfio/17",
                          "/dev/vfio/devices/vfio0<-/host/dev/vfio/devices/"
                          "vfio0"));
}

TEST(PassthroughSpecTest, NoVfioGpuIsAnError) {
  vfio::Inventory inv;
  inv.gpus = {Gpu("0000:3b:00.0", "nvidia", 17)};
  absl::StatusOr<Spec> spec = BuildPassthroughSpec(inv, "nvidia.com", "/dev");
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(spec.status().message(), HasSubstr("vfio-pci"));
}

}  // namespace
}  // namespace gpulet::cdi
