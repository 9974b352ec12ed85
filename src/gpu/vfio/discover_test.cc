#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/gpu/testing/test_tree.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TestTree;

const Gpu* Find(const Inventory& inv, const std::string& address) {
  for (const Gpu& gpu : inv.gpus) {
    if (gpu.function.address == address) return &gpu;
  }
  return nullptr;
}

TEST(DiscoverTest, MixedNodeListsEveryGpuWithItsDriverAndGroup) {
  TestTree tree;
  tree.Render("mixed-vfio");
  absl::StatusOr<Inventory> inv = Discover(tree.roots());
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->gpus.size(), 8u);
  EXPECT_FALSE(inv->iommufd);
  const Gpu& first = inv->gpus[0];
  EXPECT_EQ(first.function.address, "0000:1b:00.0");
  EXPECT_EQ(first.function.vendor, 0x10de);
  EXPECT_EQ(first.function.device, 0x2330);
  EXPECT_EQ(first.function.class_code, 0x030200u);
  EXPECT_EQ(first.function.driver, "nvidia");
  EXPECT_EQ(first.function.iommu_group, 30);
  EXPECT_EQ(first.function.numa_node, 0);
  ASSERT_EQ(first.group.size(), 1u);
  const Gpu& vm = inv->gpus[4];
  EXPECT_EQ(vm.function.address, "0000:9d:00.0");
  EXPECT_EQ(vm.function.driver, "vfio-pci");
  EXPECT_EQ(vm.function.iommu_group, 50);
  EXPECT_EQ(vm.function.numa_node, 1);
  EXPECT_EQ(vm.vfio_cdev, "");
  EXPECT_EQ(GroupDevicePath(tree.roots(), 50), tree.root() + "/dev/vfio/50");
}

TEST(DiscoverTest, GroupsHoldCompanionsBridgesAndForeignDevices) {
  TestTree tree;
  tree.Render("vfio-groups");
  absl::StatusOr<Inventory> inv = Discover(tree.roots());
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->gpus.size(), 4u);  // audio, bridge and NVMe are not GPUs
  const Gpu* gpu0 = Find(*inv, "0000:17:00.0");
  ASSERT_NE(gpu0, nullptr);
  ASSERT_EQ(gpu0->group.size(), 2u);
  EXPECT_EQ(gpu0->group[1].address, "0000:17:00.1");
  EXPECT_EQ(gpu0->group[1].class_code, 0x040300u);
  EXPECT_EQ(gpu0->group[1].driver, "snd_hda_intel");
  const Gpu* shared = Find(*inv, "0000:33:00.0");
  ASSERT_NE(shared, nullptr);
  std::vector<std::string> members;
  for (const PciFunction& fn : shared->group) members.push_back(fn.address);
  EXPECT_THAT(members,
              ElementsAre("0000:31:00.0", "0000:32:00.0", "0000:32:00.1",
                          "0000:33:00.0", "0000:33:00.1"));
  EXPECT_TRUE(shared->group[0].IsBridge());
  const Gpu* nvme = Find(*inv, "0000:ca:00.0");
  ASSERT_NE(nvme, nullptr);
  ASSERT_EQ(nvme->group.size(), 2u);
  EXPECT_EQ(nvme->group[1].vendor, 0x144d);
  EXPECT_EQ(nvme->group[1].driver, "nvme");
}

TEST(DiscoverTest, IommufdHostNamesTheCdevs) {
  TestTree tree;
  tree.Render("vfio-iommufd");
  absl::StatusOr<Inventory> inv = Discover(tree.roots());
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_TRUE(inv->iommufd);
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->gpus[0].vfio_cdev, "vfio0");
  EXPECT_EQ(inv->gpus[1].vfio_cdev, "vfio1");
  EXPECT_EQ(inv->gpus[0].function.device, 0x2331);
}

TEST(DiscoverTest, VgpuHostListsTypesAndMdevs) {
  TestTree tree;
  tree.Render("vgpu-host");
  absl::StatusOr<Inventory> inv = Discover(tree.roots());
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->gpus.size(), 2u);
  ASSERT_EQ(inv->gpus[0].mdev_types.size(), 3u);
  EXPECT_EQ(inv->gpus[0].mdev_types[2].id, "nvidia-701");
  EXPECT_EQ(inv->gpus[0].mdev_types[2].name, "GRID A100D-40C");
  EXPECT_EQ(inv->gpus[0].mdev_types[2].available_instances, 2);
  ASSERT_EQ(inv->mdevs.size(), 2u);
  const Mdev& mdev = inv->mdevs[1];  // sorted by UUID
  EXPECT_EQ(mdev.uuid, "9f1c6d2a-4b3e-4e8f-a1d7-5c0b2e9f8a63");
  EXPECT_EQ(mdev.type_id, "nvidia-701");
  EXPECT_EQ(mdev.type_name, "GRID A100D-40C");
  EXPECT_EQ(mdev.parent, "0000:31:00.0");
  EXPECT_EQ(mdev.iommu_group, 72);
}

TEST(DiscoverTest, MdevWithoutTypeOrGroupLinkIsListedWithDefaults) {
  TestTree tree;
  tree.Render("vgpu-host");
  const std::string mdevs = tree.roots().sys.string() + "/bus/mdev/devices/";
  fs::remove(mdevs + "9f1c6d2a-4b3e-4e8f-a1d7-5c0b2e9f8a63/mdev_type");
  fs::remove(mdevs + "2e7a0b94-1c5d-4f36-8e2b-7a9d3c6f0e15/iommu_group");
  absl::StatusOr<Inventory> inv = Discover(tree.roots());
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->mdevs.size(), 2u);
  EXPECT_EQ(inv->mdevs[0].iommu_group, -1);
  EXPECT_EQ(inv->mdevs[0].type_name, "GRID A100D-40C");
  EXPECT_EQ(inv->mdevs[1].type_id, "");
  EXPECT_EQ(inv->mdevs[1].type_name, "");
  EXPECT_EQ(inv->mdevs[1].parent, "0000:31:00.0");
}

TEST(DiscoverTest, SriovLinks) {
  TestTree tree;
  tree.Render("vfio-iommufd");
  const std::string pf = tree.Pci("0000:4a:00.0");
  fs::create_symlink("../0000:4a:00.5", pf + "/virtfn1");
  fs::create_symlink("../0000:4a:00.4", pf + "/virtfn0");
  fs::create_symlink("../0000:4a:00.0", tree.Pci("0000:ca:00.0") + "/physfn");
  absl::StatusOr<Inventory> inv = Discover(tree.roots());
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_THAT(inv->gpus[0].virtual_functions,
              ElementsAre("0000:4a:00.4", "0000:4a:00.5"));
  EXPECT_EQ(inv->gpus[1].physfn, "0000:4a:00.0");
}

TEST(DiscoverTest, MissingLinksLeaveDefaults) {
  TestTree tree;
  tree.Render("mixed-vfio");
  fs::remove(tree.Pci("0000:9d:00.0") + "/iommu_group");
  // A dangling driver link still names its driver.
  const std::string link = tree.Pci("0000:c3:00.0") + "/driver";
  fs::remove(link);
  fs::create_symlink("../../../bus/pci/drivers/gone", link);
  absl::StatusOr<Inventory> inv = Discover(tree.roots());
  ASSERT_TRUE(inv.ok()) << inv.status();
  const Gpu* no_group = Find(*inv, "0000:9d:00.0");
  ASSERT_NE(no_group, nullptr);
  EXPECT_EQ(no_group->function.iommu_group, -1);
  ASSERT_EQ(no_group->group.size(), 1u);
  EXPECT_EQ(Find(*inv, "0000:c3:00.0")->function.driver, "gone");
}

TEST(DiscoverTest, UnreadableOrMalformedAttributesNameThePath) {
  TestTree tree;
  tree.Render("mixed-vfio");
  const std::string vendor = tree.Pci("0000:43:00.0") + "/vendor";
  tree.Write(vendor, "nvidia\n");
  absl::StatusOr<Inventory> inv = Discover(tree.roots());
  ASSERT_FALSE(inv.ok());
  EXPECT_THAT(std::string(inv.status().message()),
              HasSubstr("0000:43:00.0/vendor: expected a hex number"));
  fs::remove(vendor);
  inv = Discover(tree.roots());
  ASSERT_FALSE(inv.ok());
  EXPECT_THAT(std::string(inv.status().message()),
              HasSubstr("0000:43:00.0/vendor"));
}

TEST(DiscoverTest, NoSysfsRoot) {
  absl::StatusOr<Inventory> inv =
      Discover({"/nonexistent/sys", "/nonexistent/dev"});
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(inv.status().message()),
              HasSubstr("/nonexistent/sys/bus/pci/devices"));
}

}  // namespace
}  // namespace gpulet::vfio
