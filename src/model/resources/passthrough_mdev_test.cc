// Mediated devices (vGPU instances) as passthrough resources: names from
// the type, UUIDs as IDs, health from the group node and the parent, and
// KubeVirt's MDEV_PCI_RESOURCE_ variable.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/resources/passthrough.h"

namespace gpulet::resources {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr char kA[] = "9f1c6d2a-4b3e-4e8f-a1d7-5c0b2e9f8a63";
constexpr char kB[] = "2e7a0b94-1c5d-4f36-8e2b-7a9d3c6f0e15";
constexpr char kC[] = "5b0c7e21-9a3d-4c6f-8e14-0d2f6a9b3c78";

class MdevTest : public ::testing::Test {
 protected:
  MdevTest() {
    char pattern[] = "/tmp/ptmdevXXXXXX";
    root_ = ::mkdtemp(pattern);
    std::filesystem::create_directories(root_ / "vfio");
    for (const char* g : {"72", "73", "74"}) Create(g);
    inv_.gpus = {Gpu("0000:31:00.0", 0, "nvidia"),
                 Gpu("0000:b1:00.0", 1, "nvidia")};
    inv_.mdevs = {Mdev(kB, "GRID A100-4C", "0000:31:00.0", 73),
                  Mdev(kA, "GRID A100-4C", "0000:31:00.0", 72),
                  Mdev(kC, "GRID A100-8C", "0000:b1:00.0", 74)};
    config_.dev_root = root_.string();
    config_.devices.clear();
    config_.mdevs = true;
  }
  ~MdevTest() override { std::filesystem::remove_all(root_); }

  void Create(const std::string& group) {
    std::ofstream(root_ / "vfio" / group).put('x');
  }
  static vfio::Gpu Gpu(const std::string& address, int numa,
                       const std::string& driver) {
    vfio::Gpu gpu;
    gpu.function.address = address;
    gpu.function.vendor = 0x10de;
    gpu.function.device = 0x20b2;
    gpu.function.class_code = 0x030200;
    gpu.function.driver = driver;
    gpu.function.numa_node = numa;
    gpu.group = {gpu.function};
    return gpu;
  }
  static vfio::Mdev Mdev(const std::string& uuid, const std::string& type,
                         const std::string& parent, int group) {
    return vfio::Mdev{uuid, "nvidia-x", type, parent, group};
  }

  std::filesystem::path root_;
  vfio::Inventory inv_;
  config::Passthrough config_;
};

TEST_F(MdevTest, OneResourcePerTypeUuidsAsIdsNumaFromTheParent) {
  PassthroughPlan plan = PlanPassthrough(inv_, config_, "gpulet");
  EXPECT_THAT(plan.errors, IsEmpty());
  ASSERT_EQ(plan.resources.size(), 2u);
  const ResourceSpec& four = plan.resources[0];
  EXPECT_EQ(four.resource_name, "nvidia.com/GRID_A100-4C");
  ASSERT_EQ(four.devices.size(), 2u);
  EXPECT_EQ(four.devices[0].id, kB);
  EXPECT_EQ(four.devices[0].visible_id, kB);
  EXPECT_TRUE(four.devices[0].healthy);
  EXPECT_EQ(four.devices[0].numa_nodes, std::vector<int64_t>{0});
  EXPECT_THAT(four.devices[0].device_nodes, ElementsAre("/dev/vfio/73"));
  EXPECT_EQ(plan.resources[1].resource_name, "nvidia.com/GRID_A100-8C");
  EXPECT_EQ(plan.resources[1].devices[0].numa_nodes, std::vector<int64_t>{1});
  EXPECT_THAT(plan.mdev_resources, ElementsAre("nvidia.com/GRID_A100-4C",
                                               "nvidia.com/GRID_A100-8C"));
  EXPECT_EQ(plan.mdev_ids.size(), 3u);
  // The parents are the vGPU manager's, never container GPUs.
  EXPECT_THAT(plan.selected, ElementsAre("0000:31:00.0", "0000:b1:00.0"));
}

TEST_F(MdevTest, OffByDefault) {
  config_.mdevs = false;
  config_.devices = {config::PassthroughSelector{}};
  PassthroughPlan plan = PlanPassthrough(inv_, config_, "gpulet");
  EXPECT_THAT(plan.resources, IsEmpty());
  EXPECT_THAT(plan.selected, IsEmpty());
}

TEST_F(MdevTest, HealthFollowsTheGroupNodeAndTheParent) {
  std::filesystem::remove(root_ / "vfio" / "72");
  inv_.gpus[1].function.driver = "vfio-pci";
  PassthroughPlan plan = PlanPassthrough(inv_, config_, "gpulet");
  EXPECT_TRUE(plan.health[kB].healthy);
  EXPECT_FALSE(plan.health[kA].healthy);
  EXPECT_THAT(plan.health[kA].reason,
              HasSubstr("mediated device " + std::string(kA) +
                        ": IOMMU group 72: " + root_.string() +
                        "/vfio/72 does not exist"));
  EXPECT_THAT(plan.health[kC].reason,
              HasSubstr("parent GPU 0000:b1:00.0 is bound to vfio-pci"));
  inv_.gpus.pop_back();
  EXPECT_THAT(RecheckPassthroughHealth(kC, inv_, RootsOf(config_)).reason,
              HasSubstr("parent GPU 0000:b1:00.0 is not in sysfs"));
  inv_.mdevs.pop_back();
  EXPECT_EQ(RecheckPassthroughHealth(kC, inv_, RootsOf(config_)).reason,
            std::string(kC) + " is no longer in sysfs");
  Create("72");
  EXPECT_TRUE(RecheckPassthroughHealth(kA, inv_, RootsOf(config_)).healthy);
}

// Bad input: an mdev without a type link cannot be named, so it is left
// out with the reason; one without a group link is Unhealthy.
TEST_F(MdevTest, MissingTypeSkipsMissingGroupIsUnhealthy) {
  inv_.mdevs[0].type_id = "";
  inv_.mdevs[0].type_name = "";
  inv_.mdevs[1].iommu_group = -1;
  PassthroughPlan plan = PlanPassthrough(inv_, config_, "gpulet");
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_THAT(plan.errors[0],
              HasSubstr("mediated device " + std::string(kB) +
                        " is not advertised: no mdev_type link"));
  EXPECT_FALSE(plan.health.contains(kB));
  EXPECT_FALSE(plan.health[kA].healthy);
  EXPECT_THAT(plan.health[kA].reason, HasSubstr("no iommu_group link"));
  ASSERT_EQ(plan.resources.size(), 2u);
  EXPECT_TRUE(plan.resources[0].devices[0].device_nodes.empty());
}

TEST_F(MdevTest, AllocateAnswersTheGroupNodeAndTheMdevVariable) {
  PassthroughPlan plan = PlanPassthrough(inv_, config_, "gpulet");
  pluginapi::DeviceSnapshot snapshot;
  snapshot.devices = plan.resources.at(0).devices;
  snapshot.BuildIndex();
  PassthroughAllocateOptions options;
  options.resource_name = "nvidia.com/GRID_A100-4C";
  options.dev_root = root_;
  options.mdev = true;
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r =
      MakePassthroughAllocate(options)(snapshot, {kA, kB});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> paths;
  for (const auto& d : r->devices()) paths.push_back(d.host_path());
  EXPECT_THAT(paths,
              ElementsAre("/dev/vfio/vfio", "/dev/vfio/72", "/dev/vfio/73"));
  EXPECT_THAT(r->envs(),
              ElementsAre(Pair("MDEV_PCI_RESOURCE_NVIDIA_COM_GRID_A100-4C",
                               std::string(kA) + "," + kB)));
  EXPECT_EQ(KubevirtMdevEnvName("nvidia.com/GRID_T4-1Q"),
            "MDEV_PCI_RESOURCE_NVIDIA_COM_GRID_T4-1Q");
}

}  // namespace
}  // namespace gpulet::resources
