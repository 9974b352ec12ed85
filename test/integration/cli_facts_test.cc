// What a person would check by eye on each built-in profile, written out
// literally (independent of the simulator's model).
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/integration/gpulet_runner.h"

namespace gpulet::testing {
namespace {

using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

json DevicesJson(const std::string& machine) {
  ProcessResult r = RunGpulet(machine, {"devices", "--json"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

json TopoJson(const std::string& machine) {
  ProcessResult r = RunGpulet(machine, {"topo", "--json"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

std::vector<std::string> Names(const json& devices) {
  std::vector<std::string> names;
  for (const auto& gpu : devices["gpus"]) names.push_back(gpu["name"]);
  return names;
}

std::vector<json> NumaNodes(const json& devices) {
  std::vector<json> nodes;
  for (const auto& gpu : devices["gpus"]) nodes.push_back(gpu["numaNode"]);
  return nodes;
}

std::vector<std::string> MigProfiles(const json& gpu) {
  std::vector<std::string> profiles;
  for (const auto& mig : gpu["migDevices"]) profiles.push_back(mig["profile"]);
  return profiles;
}

// Off-diagonal matrix cells, as a set.
std::set<std::string> Connections(const json& topo) {
  std::set<std::string> cells;
  for (size_t a = 0; a < topo["matrix"].size(); ++a) {
    for (size_t b = 0; b < topo["matrix"].size(); ++b) {
      if (a != b) cells.insert(topo["matrix"][a][b].get<std::string>());
    }
  }
  return cells;
}

TEST(DgxH100Test, EightH100sOnTwoNumaNodesAllNv18) {
  json devices = DevicesJson("dgx-h100");
  EXPECT_THAT(Names(devices),
              ::testing::ElementsAreArray(
                  std::vector<std::string>(8, "NVIDIA H100 80GB HBM3")));
  EXPECT_EQ(NumaNodes(devices), (std::vector<json>{0, 0, 0, 0, 1, 1, 1, 1}));
  json topo = TopoJson("dgx-h100");
  EXPECT_EQ(Connections(topo), std::set<std::string>{"NV18"});
  EXPECT_EQ(topo["pairs"][0]["nvlinkKind"], "nvswitch");
  ProcessResult table = RunGpulet("dgx-h100", {"topo"});
  EXPECT_THAT(table.out, HasSubstr("GPU0   X      NV18   NV18"));
  EXPECT_THAT(table.out, HasSubstr("0-55,112-167"));
}

// Blackwell and H200 nodes: every link counted (NVML 13 reads up to 36 per
// GPU), the architecture named, and the GB200 tray's fabric clique shown.
TEST(RecentGpusTest, DgxB200HgxH200AndGb200AreAllNv18) {
  for (const std::string profile : {"dgx-b200", "hgx-h200", "gb200-nvl"}) {
    SCOPED_TRACE(profile);
    json topo = TopoJson(profile);
    EXPECT_EQ(Connections(topo), std::set<std::string>{"NV18"});
    EXPECT_EQ(topo["pairs"][0]["nvlinkKind"], "nvswitch");
  }
  json b200 = DevicesJson("dgx-b200");
  EXPECT_EQ(b200["nvmlVersion"], "13.580.82.07");
  EXPECT_EQ(b200["gpus"][0]["architecture"], "Blackwell");
  EXPECT_EQ(b200["gpus"][0]["computeCapability"], "10.0");
  EXPECT_TRUE(b200["gpus"][0]["fabric"].is_null());
  json gb200 = DevicesJson("gb200-nvl");
  ASSERT_EQ(gb200["gpus"].size(), 4u);
  for (const auto& gpu : gb200["gpus"]) {
    EXPECT_EQ(gpu["fabric"]["clusterUuid"],
              "190abd46-89ce-5965-bb4c-944992ac3cd5");
    EXPECT_EQ(gpu["fabric"]["cliqueId"], 32766);
    EXPECT_EQ(gpu["fabric"]["health"], "healthy");
  }
}

TEST(DefaultMachineTest, IsDgxH100) {
  ProcessResult r = RunGpulet("", {"devices", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(json::parse(r.out)["gpus"].size(), 8u);
}

TEST(DgxA100Test, EightA100sAllNv12) {
  json devices = DevicesJson("dgx-a100");
  EXPECT_THAT(Names(devices),
              ::testing::ElementsAreArray(
                  std::vector<std::string>(8, "NVIDIA A100-SXM4-40GB")));
  EXPECT_EQ(Connections(TopoJson("dgx-a100")), std::set<std::string>{"NV12"});
}

TEST(PcieT4Test, FourT4sNoNvLinkTwoNumaNodes) {
  json devices = DevicesJson("pcie-t4");
  EXPECT_THAT(Names(devices), ::testing::ElementsAreArray(
                                  std::vector<std::string>(4, "Tesla T4")));
  EXPECT_EQ(NumaNodes(devices), (std::vector<json>{0, 0, 1, 1}));
  json topo = TopoJson("pcie-t4");
  EXPECT_EQ(topo["matrix"][0][1], "PIX");
  EXPECT_EQ(topo["matrix"][0][2], "SYS");
  EXPECT_EQ(topo["matrix"][2][3], "PHB");
  for (const auto& cell : Connections(topo)) {
    EXPECT_THAT(cell, Not(::testing::StartsWith("NV")));
  }
  for (const auto& pair : topo["pairs"]) EXPECT_EQ(pair["nvlinkCount"], 0);
}

TEST(Islands16Test, NvLinkInsideIslandsSysAcross) {
  json topo = TopoJson("islands-16");
  ASSERT_EQ(topo["matrix"].size(), 16u);
  for (size_t a = 0; a < 16; ++a) {
    for (size_t b = 0; b < 16; ++b) {
      if (a == b) continue;
      const std::string cell = topo["matrix"][a][b];
      if ((a < 8) == (b < 8)) {
        EXPECT_THAT(cell, ::testing::StartsWith("NV")) << a << "," << b;
      } else {
        EXPECT_EQ(cell, "SYS") << a << "," << b;
      }
    }
  }
}

TEST(A100MigTest, MixedLayoutsWithNvidiaProfileNames) {
  json devices = DevicesJson("a100-mig");
  ASSERT_EQ(devices["gpus"].size(), 4u);
  const auto& gpus = devices["gpus"];
  EXPECT_THAT(MigProfiles(gpus[0]),
              ::testing::UnorderedElementsAre("3g.20gb", "2g.10gb", "1g.5gb"));
  EXPECT_THAT(MigProfiles(gpus[1]), ::testing::ElementsAreArray(
                                        std::vector<std::string>(7, "1g.5gb")));
  EXPECT_THAT(MigProfiles(gpus[2]),
              ::testing::ElementsAre("3g.20gb", "3g.20gb"));
  EXPECT_TRUE(gpus[3]["migCapable"]);
  EXPECT_FALSE(gpus[3]["migEnabled"]);
  EXPECT_TRUE(gpus[3]["migDevices"].empty());

  ProcessResult table = RunGpulet("a100-mig", {"devices"});
  EXPECT_THAT(table.out, HasSubstr("  0:"));
  EXPECT_THAT(table.out, HasSubstr("MIG 3g.20gb"));
  EXPECT_THAT(table.out, HasSubstr("Disabled"));
}

TEST(A100MigSingleTest, UniformOneGFiveGb) {
  json devices = DevicesJson("a100-mig-single");
  for (const auto& gpu : devices["gpus"]) {
    EXPECT_TRUE(gpu["migEnabled"]);
    EXPECT_THAT(MigProfiles(gpu), Each(std::string("1g.5gb")));
    EXPECT_EQ(gpu["migDevices"].size(), 7u);
  }
}

TEST(NoneTest, EmptyTableExitsZero) {
  ProcessResult r = RunGpulet("none", {"devices"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out,
              HasSubstr("INDEX  UUID  NAME  MEMORY  BUS ID  NUMA  MIG\n"));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2);
  EXPECT_TRUE(DevicesJson("none")["gpus"].empty());
  ProcessResult topo = RunGpulet("none", {"topo"});
  EXPECT_EQ(topo.exit_code, 0) << Describe(topo);
}

}  // namespace
}  // namespace gpulet::testing
