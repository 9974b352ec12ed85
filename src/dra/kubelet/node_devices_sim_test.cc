// DRA device names of a discovered MIG node (a100-mig from the NVML
// simulator, through the production dlopen path): every MIG device gets a
// name from its GPU instance's placement, the names are unique, and each
// resolves back to the same MIG device; a GPU named by its index keeps the
// driver's minor.
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/dra/kubelet/claim_cdi.h"
#include "src/dra/kubelet/device_names.h"
#include "src/dra/kubelet/node_devices.h"
#include "src/gpu/device/discovery.h"
#include "src/gpu/testing/sim_test_support.h"

namespace gpulet::dra {
namespace {

using ::gpulet::nvml::simtest::SimTest;

class NodeDevicesSimTest : public SimTest {};

TEST_F(NodeDevicesSimTest, MigDevicesAreNamedByPlacementAndResolveBack) {
  nvml::LibraryPtr lib = OpenSim("a100-mig");
  ASSERT_NE(lib, nullptr);
  absl::StatusOr<device::Node> node = device::Discover(*lib);
  ASSERT_TRUE(node.ok()) << node.status();
  std::vector<std::string> names = NodeDeviceNames(*node);
  size_t mig_devices = 0;
  for (const device::Gpu& gpu : node->gpus) {
    for (const device::MigDevice& mig : gpu.mig_devices) {
      ++mig_devices;
      ASSERT_TRUE(mig.gi_placement.has_value()) << mig.uuid;
      EXPECT_GT(mig.gi_placement->size, 0u) << mig.uuid;
    }
  }
  ASSERT_GT(mig_devices, 0u);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(),
            names.size());
  std::set<std::string> resolved;
  for (const std::string& name : names) {
    absl::StatusOr<DeviceRef> ref = ParseDeviceName(name);
    ASSERT_TRUE(ref.ok()) << ref.status();
    absl::StatusOr<std::string> uuid = ResolveDevice(*node, *ref, name);
    ASSERT_TRUE(uuid.ok()) << uuid.status();
    resolved.insert(*uuid);
  }
  EXPECT_EQ(resolved.size(), names.size());
}

// Discovery takes each GPU's minor from NVML (the driver's probe order),
// never from its index: a100-mig's GPUs 0-3 have minors 2, 0, 4, 1
// (sim/profiles/a100-mig.yaml), and the DRA name "gpu-3", which carries the
// index, is GPU 3, whose node is /dev/nvidia1.
TEST_F(NodeDevicesSimTest, IndexNamesKeepTheDriversMinors) {
  nvml::LibraryPtr lib = OpenSim("a100-mig");
  ASSERT_NE(lib, nullptr);
  absl::StatusOr<device::Node> node = device::Discover(*lib);
  ASSERT_TRUE(node.ok()) << node.status();
  const unsigned want[] = {2, 0, 4, 1};
  ASSERT_EQ(node->gpus.size(), 4u);
  for (unsigned i = 0; i < 4; ++i) {
    EXPECT_EQ(node->gpus[i].index, i);
    EXPECT_EQ(node->gpus[i].minor, want[i]) << node->gpus[i].uuid;
  }
  absl::StatusOr<DeviceRef> ref = ParseDeviceName("gpu-3");
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<std::string> uuid = ResolveDevice(*node, *ref, "gpu-3");
  ASSERT_TRUE(uuid.ok()) << uuid.status();
  EXPECT_EQ(*uuid, "GPU-7686041d-dbe9-5c49-b4fb-b61b57525544");
  EXPECT_EQ(node->gpus[3].uuid, *uuid);
}

}  // namespace
}  // namespace gpulet::dra
