#include "src/cli/topo_format.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace gpulet::cli {
namespace {

using device::LinkKind;
using device::PairLinks;
using device::Topology;
using device::TopologyGpu;
using device::TopologyPair;

// GPU0-GPU1 on NVSwitch (NV18); GPU2 alone on the other socket.
Topology ThreeGpus() {
  std::vector<TopologyGpu> gpus = {
      {0, "GPU-0", "00000000:18:00.0", 0, {0, 1, 2, 3}},
      {1, "GPU-1", "00000000:2A:00.0", 0, {0, 1, 2, 3}},
      {2, "GPU-2", "00000000:9A:00.0", std::nullopt, {}},
  };
  std::vector<TopologyPair> pairs(9);
  for (size_t a = 0; a < 3; ++a) {
    for (size_t b = 0; b < 3; ++b) {
      TopologyPair& p = pairs[a * 3 + b];
      p.level = a == b ? NVML_TOPOLOGY_INTERNAL : NVML_TOPOLOGY_SYSTEM;
      p.p2p.read = NVML_P2P_STATUS_OK;
    }
  }
  pairs[0 * 3 + 1].level = pairs[1 * 3 + 0].level = NVML_TOPOLOGY_NODE;
  pairs[0 * 3 + 1].links = pairs[1 * 3 + 0].links =
      PairLinks{LinkKind::kNvSwitch, 18, 0, 18};
  return Topology(gpus, pairs);
}

TEST(TopoMatrixTest, MatrixAffinityColumnsAndLegend) {
  std::string text = FormatTopoMatrix(ThreeGpus());
  EXPECT_THAT(text, testing::StartsWith(
                        "       GPU0   GPU1   GPU2   CPU Affinity   NUMA "
                        "Affinity\n"
                        "GPU0   X      NV18   SYS    0-3            0\n"
                        "GPU1   NV18   X      SYS    0-3            0\n"
                        "GPU2   SYS    SYS    X      N/A            N/A\n"
                        "\nLegend:\n"));
  EXPECT_THAT(text, testing::HasSubstr("NV#  = Connection traversing"));
  EXPECT_THAT(text, testing::HasSubstr("PIX  = "));
}

TEST(TopoMatrixTest, ConnectionNamesForEveryLevel) {
  std::vector<TopologyGpu> gpus(2);
  gpus[1].index = 1;
  for (auto [level, want] :
       std::vector<std::pair<nvmlGpuTopologyLevel_t, const char*>>{
           {NVML_TOPOLOGY_SINGLE, "PIX"},
           {NVML_TOPOLOGY_MULTIPLE, "PXB"},
           {NVML_TOPOLOGY_HOSTBRIDGE, "PHB"},
           {NVML_TOPOLOGY_NODE, "NODE"},
           {NVML_TOPOLOGY_SYSTEM, "SYS"}}) {
    std::vector<TopologyPair> pairs(4);
    pairs[1].level = pairs[2].level = level;
    Topology topology(gpus, pairs);
    EXPECT_EQ(ConnectionName(topology, 0, 1), want);
    EXPECT_EQ(ConnectionName(topology, 1, 1), "X");
  }
}

TEST(TopoMatrixTest, EmptyTopology) {
  EXPECT_THAT(FormatTopoMatrix(Topology()),
              testing::StartsWith("   CPU Affinity   NUMA Affinity\n\n"));
}

TEST(TopoJsonTest, FullModel) {
  auto doc = nlohmann::json::parse(FormatTopoJson(ThreeGpus()));
  ASSERT_EQ(doc["gpus"].size(), 3u);
  EXPECT_EQ(doc["gpus"][0]["cpuAffinity"], "0-3");
  EXPECT_TRUE(doc["gpus"][2]["numaNode"].is_null());
  EXPECT_EQ(doc["matrix"][0], nlohmann::json::array({"X", "NV18", "SYS"}));
  ASSERT_EQ(doc["pairs"].size(), 6u);
  const auto& p01 = doc["pairs"][0];
  EXPECT_EQ(p01["gpu1"], 0);
  EXPECT_EQ(p01["gpu2"], 1);
  EXPECT_EQ(p01["connection"], "NV18");
  EXPECT_EQ(p01["level"], "NODE");
  EXPECT_EQ(p01["nvlinkKind"], "nvswitch");
  EXPECT_EQ(p01["nvlinkCount"], 18);
  EXPECT_EQ(p01["switchedLinks"], 18);
  EXPECT_EQ(p01["p2p"]["read"], "OK");
  EXPECT_EQ(p01["p2p"]["write"], "unknown");
}

}  // namespace
}  // namespace gpulet::cli
