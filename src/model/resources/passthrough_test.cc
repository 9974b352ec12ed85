// Passthrough resources from an inventory and the passthrough section, and
// their Allocate answers over a temporary dev root.
#include "src/model/resources/passthrough.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::resources {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using Kind = config::PassthroughSelector::Kind;

class TempDev {
 public:
  TempDev() {
    char pattern[] = "/tmp/ptdevXXXXXX";
    root_ = ::mkdtemp(pattern);
    std::filesystem::create_directories(root_ / "vfio");
  }
  ~TempDev() { std::filesystem::remove_all(root_); }
  void Create(const std::string& rel) { std::ofstream(root_ / rel).put('x'); }
  void Remove(const std::string& rel) { std::filesystem::remove(root_ / rel); }
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
};

vfio::PciFunction Function(std::string address, uint16_t device,
                           uint32_t class_code, std::string driver, int group,
                           int numa = -1) {
  vfio::PciFunction f;
  f.address = std::move(address);
  f.vendor = 0x10de;
  f.device = device;
  f.class_code = class_code;
  f.driver = std::move(driver);
  f.iommu_group = group;
  f.numa_node = numa;
  return f;
}

// A GPU with its audio companion in one group.
vfio::Gpu Gpu(const std::string& bus, int group, std::string driver,
              std::string audio_driver = "vfio-pci", int numa = 0) {
  vfio::Gpu gpu;
  gpu.function =
      Function("0000:" + bus + ":00.0", 0x2330, 0x030200, driver, group, numa);
  gpu.group = {gpu.function, Function("0000:" + bus + ":00.1", 0x22e8, 0x040300,
                                      audio_driver, group, numa)};
  return gpu;
}

config::Passthrough Config(const TempDev& dev) {
  config::Passthrough c;
  c.dev_root = dev.root().string();
  c.pci_ids = "";
  c.resource_names = {{0x2330, "H100"}};
  return c;
}

TEST(PassthroughTest, KubevirtEnvName) {
  EXPECT_EQ(KubevirtEnvName("nvidia.com/GH100_H100_SXM5_80GB"),
            "PCI_RESOURCE_NVIDIA_COM_GH100_H100_SXM5_80GB");
}

TEST(PassthroughTest, VfioBoundGpusOnlyOneDeviceEachWithNuma) {
  TempDev dev;
  dev.Create("vfio/17");
  dev.Create("vfio/18");
  vfio::Inventory inv;
  inv.gpus = {Gpu("3b", 17, "vfio-pci"), Gpu("5e", 18, "vfio-pci"),
              Gpu("86", 19, "nvidia", "snd_hda_intel", 1)};
  inv.gpus[1].function.numa_node = 1;
  PassthroughPlan plan = PlanPassthrough(inv, Config(dev), "gpulet");
  ASSERT_EQ(plan.resources.size(), 1u);
  const ResourceSpec& spec = plan.resources[0];
  EXPECT_EQ(spec.resource_name, "nvidia.com/H100");
  EXPECT_EQ(spec.socket_name, "gpulet-H100.sock");
  ASSERT_EQ(spec.devices.size(), 2u);  // companions and the nvidia GPU out
  EXPECT_EQ(spec.devices[0].id, "0000:3b:00.0");
  EXPECT_EQ(spec.devices[0].numa_nodes, std::vector<int64_t>{0});
  EXPECT_EQ(spec.devices[1].numa_nodes, std::vector<int64_t>{1});
  EXPECT_THAT(spec.devices[0].device_nodes, ElementsAre("/dev/vfio/17"));
  EXPECT_TRUE(spec.devices[0].healthy);
  EXPECT_EQ(spec.devices[0].gpu_index, -1);
  EXPECT_THAT(plan.selected, ElementsAre("0000:3b:00.0", "0000:5e:00.0"));
  EXPECT_TRUE(plan.errors.empty());
}

TEST(PassthroughTest, NonViableGroupIsUnhealthyWithTheReason) {
  TempDev dev;
  dev.Create("vfio/17");
  vfio::Inventory inv;
  inv.gpus = {Gpu("3b", 17, "vfio-pci", "snd_hda_intel")};
  PassthroughPlan plan = PlanPassthrough(inv, Config(dev), "gpulet");
  ASSERT_EQ(plan.resources.size(), 1u);
  EXPECT_FALSE(plan.resources[0].devices[0].healthy);
  EXPECT_THAT(plan.health["0000:3b:00.0"].reason, HasSubstr("0000:3b:00.1"));
  EXPECT_THAT(plan.health["0000:3b:00.0"].reason, HasSubstr("snd_hda_intel"));
}

TEST(PassthroughTest, MissingGroupNodeIsUnhealthy) {
  TempDev dev;
  vfio::Inventory inv;
  inv.gpus = {Gpu("3b", 17, "vfio-pci")};
  PassthroughPlan plan = PlanPassthrough(inv, Config(dev), "gpulet");
  EXPECT_FALSE(plan.health["0000:3b:00.0"].healthy);
  EXPECT_THAT(plan.health["0000:3b:00.0"].reason,
              HasSubstr("IOMMU group 17: " + dev.root().string() +
                        "/vfio/17 does not exist"));
}

TEST(PassthroughTest, SelectedByAddressStillOnNvidiaIsUnhealthyNotContainer) {
  TempDev dev;
  vfio::Inventory inv;
  inv.gpus = {Gpu("3b", 17, "nvidia", "snd_hda_intel"),
              Gpu("5e", 18, "nvidia")};
  config::Passthrough c = Config(dev);
  c.devices = {{Kind::kPciAddress, "0000:3b:00.0", 0},
               {Kind::kPciAddress, "0000:99:00.0", 0},
               {Kind::kDeviceId, "", 0x1234}};
  PassthroughPlan plan = PlanPassthrough(inv, c, "gpulet");
  ASSERT_EQ(plan.resources.size(), 1u);
  ASSERT_EQ(plan.resources[0].devices.size(), 1u);
  EXPECT_FALSE(plan.resources[0].devices[0].healthy);
  EXPECT_THAT(plan.health["0000:3b:00.0"].reason, HasSubstr("nvidia"));
  EXPECT_THAT(plan.errors,
              ElementsAre(HasSubstr("passthrough.devices[1]: selects nothing: "
                                    "0000:99:00.0"),
                          HasSubstr("passthrough.devices[2]: selects nothing: "
                                    "10de:1234")));

  device::Node node;
  node.gpus.resize(2);
  node.gpus[0].bus_id = "00000000:3B:00.0";
  node.gpus[1].bus_id = "00000000:5E:00.0";
  node.gpus[1].index = 1;
  device::Node containers = WithoutPassthrough(node, plan.selected);
  ASSERT_EQ(containers.gpus.size(), 1u);
  EXPECT_EQ(containers.gpus[0].index, 1u);
}

// A plan made again while serving keeps what was selected: a GPU that left
// vfio-pci stays a passthrough device, Unhealthy, rather than vanishing.
TEST(PassthroughTest, KeptGpuThatLeftVfioStaysUnhealthy) {
  TempDev dev;
  dev.Create("vfio/18");
  vfio::Inventory inv;
  inv.gpus = {Gpu("3b", 17, "nvidia"), Gpu("5e", 18, "vfio-pci")};
  PassthroughPlan plan =
      PlanPassthrough(inv, Config(dev), "gpulet", {"0000:3b:00.0"});
  ASSERT_EQ(plan.resources.size(), 1u);
  ASSERT_EQ(plan.resources[0].devices.size(), 2u);
  EXPECT_FALSE(plan.health["0000:3b:00.0"].healthy);
  EXPECT_THAT(plan.health["0000:3b:00.0"].reason,
              HasSubstr("0000:3b:00.0 (GPU, 10de:2330) is bound to nvidia"));
  EXPECT_TRUE(plan.health["0000:5e:00.0"].healthy);
}

// Bound to vfio-pci by hand while the selectors name other GPUs: not a
// container GPU any more, and not a passthrough device either.
TEST(PassthroughTest, UnselectedGpuOnVfioIsOutOfBothWorlds) {
  TempDev dev;
  vfio::Inventory inv;
  inv.gpus = {Gpu("3b", 17, "vfio-pci"), Gpu("5e", 18, "nvidia")};
  config::Passthrough c = Config(dev);
  c.devices = {{Kind::kPciAddress, "0000:5e:00.0", 0}};
  PassthroughPlan plan = PlanPassthrough(inv, c, "gpulet");
  EXPECT_THAT(plan.selected, ElementsAre("0000:3b:00.0", "0000:5e:00.0"));
  ASSERT_EQ(plan.resources.size(), 1u);
  ASSERT_EQ(plan.resources[0].devices.size(), 1u);
  EXPECT_EQ(plan.resources[0].devices[0].id, "0000:5e:00.0");
  EXPECT_THAT(plan.errors,
              ElementsAre(HasSubstr("GPU 0000:3b:00.0 is bound to vfio-pci "
                                    "but no passthrough.devices entry")));
}

TEST(PassthroughTest, UnknownDeviceIdGetsTheRawName) {
  TempDev dev;
  vfio::Inventory inv;
  inv.gpus = {Gpu("3b", 17, "vfio-pci")};
  inv.gpus[0].function.device = 0xfffe;
  config::Passthrough c = Config(dev);
  PassthroughPlan plan = PlanPassthrough(inv, c, "gpulet");
  ASSERT_EQ(plan.resources.size(), 1u);
  EXPECT_EQ(plan.resources[0].resource_name, "nvidia.com/10DE_FFFE");
}

pluginapi::DeviceSnapshot Snapshot(const PassthroughPlan& plan) {
  pluginapi::DeviceSnapshot s;
  s.devices = plan.resources.at(0).devices;
  s.BuildIndex();
  return s;
}

TEST(PassthroughTest, AllocateAnswersGroupNodesAndKubevirtVariable) {
  TempDev dev;
  dev.Create("vfio/17");
  dev.Create("vfio/18");
  vfio::Inventory inv;
  inv.gpus = {Gpu("3b", 17, "vfio-pci"), Gpu("5e", 18, "vfio-pci")};
  PassthroughPlan plan = PlanPassthrough(inv, Config(dev), "gpulet");
  pluginapi::AllocateHandler allocate = MakePassthroughAllocate(
      {"nvidia.com/H100", dev.root(), "/dev", false, nullptr});
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r =
      allocate(Snapshot(plan), {"0000:5e:00.0", "0000:3b:00.0"});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> specs;
  for (const auto& d : r->devices()) {
    specs.push_back(d.container_path() + "=" + d.host_path() + ":" +
                    d.permissions());
  }
  EXPECT_THAT(specs, ElementsAre("/dev/vfio/vfio=/dev/vfio/vfio:mrw",
                                 "/dev/vfio/18=/dev/vfio/18:mrw",
                                 "/dev/vfio/17=/dev/vfio/17:mrw"));
  EXPECT_THAT(r->envs(), ElementsAre(Pair("PCI_RESOURCE_NVIDIA_COM_H100",
                                          "0000:5e:00.0,0000:3b:00.0")));
}

TEST(PassthroughTest, AllocateWithIommufdAddsIommuAndCdev) {
  TempDev dev;
  dev.Create("vfio/17");
  vfio::Inventory inv;
  inv.gpus = {Gpu("3b", 17, "vfio-pci")};
  inv.gpus[0].vfio_cdev = "vfio3";
  inv.iommufd = true;
  PassthroughPlan plan = PlanPassthrough(inv, Config(dev), "gpulet");
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r =
      MakePassthroughAllocate({"nvidia.com/H100", dev.root(), "/host/dev", true,
                               nullptr})(Snapshot(plan), {"0000:3b:00.0"});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> paths;
  for (const auto& d : r->devices()) paths.push_back(d.host_path());
  EXPECT_THAT(paths,
              ElementsAre("/host/dev/iommu", "/host/dev/vfio/vfio",
                          "/host/dev/vfio/17", "/host/dev/vfio/devices/vfio3"));
}

TEST(PassthroughTest, GroupVanishingBeforeAllocateFailsNamingIt) {
  TempDev dev;
  dev.Create("vfio/17");
  vfio::Inventory inv;
  inv.gpus = {Gpu("3b", 17, "vfio-pci")};
  PassthroughPlan plan = PlanPassthrough(inv, Config(dev), "gpulet");
  std::vector<std::string> vanished;
  pluginapi::AllocateHandler allocate = MakePassthroughAllocate(
      {"nvidia.com/H100", dev.root(), "/dev", false,
       [&](const std::string& id, const std::string& reason) {
         vanished.push_back(id + ": " + reason);
       }});
  dev.Remove("vfio/17");
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r =
      allocate(Snapshot(plan), {"0000:3b:00.0"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(),
              HasSubstr("IOMMU group 17 of 0000:3b:00.0 is gone"));
  EXPECT_THAT(vanished, ElementsAre(HasSubstr("0000:3b:00.0: IOMMU group 17")));
}

}  // namespace
}  // namespace gpulet::resources
