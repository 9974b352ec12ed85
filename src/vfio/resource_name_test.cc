#include "src/vfio/resource_name.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "gtest/gtest.h"
#include "src/nvml/sim/gpu_models.h"
#include "src/vfio/vfio.h"

namespace gpulet::vfio {
namespace {

TEST(ResourceNameTest, TableNamesFollowKubeVirtsRule) {
  const std::map<uint16_t, std::string> none;
  EXPECT_EQ(ResourceName(0x2330, none, ""), "GH100_H100_SXM5_80GB");
  EXPECT_EQ(ResourceName(0x20b2, none, ""), "GA100_A100_SXM4_80GB");
  EXPECT_EQ(ResourceName(0x20b7, none, ""), "GA100GL_A30_PCIE");
  EXPECT_EQ(ResourceName(0x2236, none, ""), "GA102GL_A10");
  EXPECT_EQ(ResourceName(0x2235, none, ""), "GA102GL_A40");
  EXPECT_EQ(ResourceName(0x27b8, none, ""), "AD104GL_L4");
  EXPECT_EQ(ResourceName(0x26b5, none, ""), "AD102GL_L40");
  EXPECT_EQ(ResourceName(0x26b9, none, ""), "AD102GL_L40S");
  EXPECT_EQ(ResourceName(0x2321, none, ""), "GH100_H100_NVL");
  EXPECT_EQ(ResourceName(0x2335, none, ""), "GH100_H200_SXM_141GB");
  EXPECT_EQ(ResourceName(0x2329, none, ""), "GH100_H20");
  EXPECT_EQ(ResourceName(0x2342, none, ""), "GH100_GH200_120GB___480GB");
  EXPECT_EQ(ResourceName(0x2901, none, ""), "GB100_B200");
  EXPECT_EQ(ResourceName(0x2941, none, ""), "GB100_GB200");
  EXPECT_EQ(ResourceName(0x2bb5, none, ""),
            "GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION");
  EXPECT_EQ(ResourceName(0x1eb8, none, ""), "TU104GL_TESLA_T4");
  EXPECT_EQ(ResourceName(0x1db1, none, ""), "GV100GL_TESLA_V100_SXM2_16GB");
}

TEST(ResourceNameTest, EveryTableNameIsAValidUniqueSuffix) {
  const std::regex valid("[A-Z0-9_]+");
  std::set<std::string> seen;
  for (const auto& [id, text] : NvidiaDeviceTable()) {
    const std::string name = ResourceName(id, {}, "");
    EXPECT_TRUE(std::regex_match(name, valid)) << name;
    EXPECT_NE(name.rfind("10DE_", 0), 0u) << name;
    // Two IDs may share a product name (A100 PCIe 40GB: 20b1, 20f1).
    seen.insert(name);
  }
  EXPECT_GE(seen.size(), NvidiaDeviceTable().size() - 1);
}

// Every GPU the simulator models is a data-centre GPU gpulet names itself,
// whatever the host's pci.ids says.
TEST(ResourceNameTest, EverySimulatedModelIsInTheTable) {
  for (const sim::GpuModel& model : sim::GpuModels()) {
    const auto device = static_cast<uint16_t>(model.pci_device_id >> 16);
    EXPECT_TRUE(NvidiaDeviceTable().contains(device))
        << model.key << " (device ID " << std::hex << device << ")";
  }
}

class PciIdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpulet-pciids-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    ASSERT_NE(made, nullptr);
    dir_ = made;
    std::ofstream(dir_ + "/pci.ids")
        << "# comment\n1000  Broadcom\n\t2235  Not NVIDIA\n"
           "10de  NVIDIA Corporation\n\t1f08  TU106 [GeForce RTX 2060 Rev. A]\n"
           "\t\t1043 86f0  subsystem line\n\t2b85  GB202 [GeForce RTX 5090]\n"
           "10df  Emulex Corporation\n\tabcd  Other\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(PciIdsTest, FallbackThenRawId) {
  const std::string ids = dir_ + "/pci.ids";
  EXPECT_EQ(ResourceName(0x1f08, {}, ids), "TU106_GEFORCE_RTX_2060_REV__A");
  EXPECT_EQ(ResourceName(0x2b85, {}, ids), "GB202_GEFORCE_RTX_5090");
  // Only NVIDIA's section counts.
  EXPECT_EQ(ResourceName(0xabcd, {}, ids), "10DE_ABCD");
  EXPECT_EQ(ResourceName(0x2235, {}, ids), "GA102GL_A40");
  EXPECT_EQ(ResourceName(0x1234, {}, dir_ + "/missing"), "10DE_1234");
  EXPECT_EQ(ResourceName(0x00ff, {}, ""), "10DE_00FF");
}

TEST_F(PciIdsTest, OverrideWins) {
  EXPECT_EQ(ResourceName(0x2330, {{0x2330, "H100_VM"}}, dir_ + "/pci.ids"),
            "H100_VM");
  EXPECT_EQ(ResourceName(0x2331, {{0x2330, "H100_VM"}}, ""), "GH100_H100_PCIE");
  EXPECT_EQ(ResourceName(0x2330, {{0x2330, "h100 vm-1"}}, ""), "H100_VM_1");
}

// docs/passthrough.md's table names only what the table gives.
TEST(ResourceNameTest, DocumentedNamesAreTheTablesNames) {
  std::ifstream in(GPULET_SOURCE_DIR "/docs/passthrough.md");
  ASSERT_TRUE(in);
  std::set<std::string> names;
  for (const auto& [id, text] : NvidiaDeviceTable()) {
    names.insert(ResourceName(id, {}, ""));
  }
  const std::regex code("`([A-Z0-9_]+)`");
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0 || line.find("_") == std::string::npos) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), code), end; it != end;
         ++it) {
      const std::string name = (*it)[1];
      if (name.find('_') == std::string::npos || name.rfind("10DE_", 0) == 0) {
        continue;
      }
      EXPECT_TRUE(names.contains(name)) << name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 20);
}

TEST(DeriveResourceNameTest, Rule) {
  EXPECT_EQ(DeriveResourceName("GH100 [H100 SXM5 80GB]"), "GH100_H100_SXM5_80GB");
  EXPECT_EQ(DeriveResourceName("GA107GL [A2 / A16]"), "GA107GL_A2___A16");
  EXPECT_EQ(DeriveResourceName("GA100 [A100-SXM-64GB]"), "GA100_A100_SXM_64GB");
  EXPECT_EQ(DeriveResourceName("a\t\tb"), "A_B");
  EXPECT_EQ(DeriveResourceName(""), "");
}

// KubeVirt's permittedHostDevices pair "GRID T4-1Q" with
// nvidia.com/GRID_T4-1Q: spaces to '_', case and '-' kept.
TEST(MdevResourceNameTest, KubeVirtsRule) {
  EXPECT_EQ(MdevResourceName("GRID T4-1Q"), "GRID_T4-1Q");
  EXPECT_EQ(MdevResourceName("GRID A100-4C"), "GRID_A100-4C");
  EXPECT_EQ(MdevResourceName("NVIDIA A10-12Q"), "NVIDIA_A10-12Q");
  EXPECT_EQ(MdevResourceName(" GRID  A100D-1-10C\n"), "GRID_A100D-1-10C");
  EXPECT_EQ(MdevResourceName("GRID RTX6000(P)-4Q"), "GRID_RTX6000P-4Q");
  EXPECT_EQ(MdevResourceName("()"), "");
}

}  // namespace
}  // namespace gpulet::vfio
