#include "src/dra/slices/node_facts.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/dra/testing/sim_devices.h"

namespace gpulet::draslice {
namespace {

using ::testing::ElementsAre;

device::Topology Linked(size_t n,
                        const std::vector<std::pair<size_t, size_t>>& links) {
  std::vector<device::TopologyGpu> gpus(n);
  for (size_t i = 0; i < n; ++i) gpus[i].index = static_cast<unsigned>(i + 10);
  std::vector<device::TopologyPair> pairs(n * n);
  for (auto [a, b] : links) {
    pairs[a * n + b].links.count = pairs[b * n + a].links.count = 2;
  }
  return device::Topology(gpus, pairs);
}

TEST(NvLinkDomainsTest, ComponentsNamedByTheirSmallestIndex) {
  // 0-1-2 chained, 3 alone, 4-5.
  EXPECT_THAT(NvLinkDomains(Linked(6, {{1, 2}, {0, 1}, {4, 5}})),
              ElementsAre(10, 10, 10, std::nullopt, 14, 14));
  EXPECT_TRUE(NvLinkDomains(device::Topology()).empty());
}

class SimFactsTest : public nvml::simtest::SimTest {};

TEST_F(SimFactsTest, IslandsSixteenHasTwoDomainsOfEight) {
  absl::StatusOr<NodeDevices> devices = testing::SimNodeDevices("islands-16");
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->nvlink_domains.size(), 16u);
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(devices->nvlink_domains[i], i < 8 ? 0 : 8) << i;
    EXPECT_EQ(devices->pcie_roots[i], "pci0000:00") << i;
  }
}

TEST_F(SimFactsTest, PcieGpusHaveNoDomain) {
  absl::StatusOr<NodeDevices> devices = testing::SimNodeDevices("pcie-t4");
  ASSERT_TRUE(devices.ok()) << devices.status();
  for (const std::optional<int>& domain : devices->nvlink_domains) {
    EXPECT_EQ(domain, std::nullopt);
  }
}

TEST(ReadPcieRootTest, FollowsTheBusLinkAndRefusesOthers) {
  nvml::simtest::TempDir dir;
  const std::string sys = dir.path() + "/sys";
  std::filesystem::create_directories(
      sys + "/devices/pci0000:17/0000:17:01.0/0000:18:00.0");
  dir.Link("sys/bus/pci/devices/0000:18:00.0",
           "../../../devices/pci0000:17/0000:17:01.0/0000:18:00.0");
  dir.Link("sys/bus/pci/devices/0000:19:00.0", "/elsewhere/0000:19:00.0");
  dir.Link("sys/bus/pci/devices/0000:1a:00.0",
           "../../../devices/pci0000:17/0000:99:00.0");
  EXPECT_EQ(ReadPcieRoot(sys, "00000000:18:00.0"), "pci0000:17");
  EXPECT_EQ(ReadPcieRoot(sys, "0000:19:00.0"), "");
  EXPECT_EQ(ReadPcieRoot(sys, "0000:1a:00.0"), "");
  EXPECT_EQ(ReadPcieRoot(sys, "0000:1b:00.0"), "");
  EXPECT_EQ(ReadPcieRoot(sys, "nonsense"), "");
}

}  // namespace
}  // namespace gpulet::draslice
