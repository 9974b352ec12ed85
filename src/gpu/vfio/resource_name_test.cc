#include "src/gpu/vfio/resource_name.h"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "gtest/gtest.h"
#include "sim/gpu_models.h"
#include "src/base/common/file_util.h"
#include "src/gpu/vfio/vfio.h"

namespace gpulet::vfio {
namespace {

// Every entry of the table with the name it gives: a name that changes
// moves a node's GPUs to another resource, so each is pinned here.
TEST(ResourceNameTest, EveryTableEntryHasItsPinnedName) {
  const std::map<uint16_t, std::string> want = {
      {0x1db1, "GV100GL_TESLA_V100_SXM2_16GB"},
      {0x1db4, "GV100GL_TESLA_V100_PCIE_16GB"},
      {0x1db5, "GV100GL_TESLA_V100_SXM2_32GB"},
      {0x1db6, "GV100GL_TESLA_V100_PCIE_32GB"},
      {0x1db8, "GV100GL_TESLA_V100_SXM3_32GB"},
      {0x1df6, "GV100GL_TESLA_V100S_PCIE_32GB"},
      {0x1eb8, "TU104GL_TESLA_T4"},
      {0x20b0, "GA100_A100_SXM4_40GB"},
      {0x20b1, "GA100_A100_PCIE_40GB"},
      {0x20b2, "GA100_A100_SXM4_80GB"},
      {0x20b3, "GA100_A100_SXM_64GB"},
      {0x20b5, "GA100_A100_PCIE_80GB"},
      {0x20b7, "GA100GL_A30_PCIE"},
      {0x20b8, "GA100_A100X"},
      {0x20f1, "GA100_A100_PCIE_40GB"},
      {0x20f3, "GA100_A800_SXM4_80GB"},
      {0x20f5, "GA100_A800_80GB_PCIE"},
      {0x20f6, "GA100_A800_40GB_PCIE"},
      {0x2230, "GA102GL_RTX_A6000"},
      {0x2235, "GA102GL_A40"},
      {0x2236, "GA102GL_A10"},
      {0x2237, "GA102GL_A10G"},
      {0x25b6, "GA107GL_A2___A16"},
      {0x26b1, "AD102GL_L6000___RTX_6000_ADA_GENERATION"},
      {0x26b5, "AD102GL_L40"},
      {0x26b9, "AD102GL_L40S"},
      {0x26ba, "AD102GL_L20"},
      {0x27b8, "AD104GL_L4"},
      {0x2313, "GH100_H100_CNX"},
      {0x2321, "GH100_H100_NVL"},
      {0x2322, "GH100_H800_PCIE"},
      {0x2324, "GH100_H800"},
      {0x2329, "GH100_H20"},
      {0x2330, "GH100_H100_SXM5_80GB"},
      {0x2331, "GH100_H100_PCIE"},
      {0x2335, "GH100_H200_SXM_141GB"},
      {0x233b, "GH100_H200_NVL"},
      {0x2342, "GH100_GH200_120GB___480GB"},
      {0x2348, "GH100_GH200_144G_HBM3E"},
      {0x2901, "GB100_B200"},
      {0x2941, "GB100_GB200"},
      {0x2bb5, "GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION"},
  };
  std::map<uint16_t, std::string> got;
  for (const auto& [id, text] : NvidiaDeviceTable()) {
    got[id] = ResourceName(id, {}, "");
  }
  EXPECT_EQ(got, want);
}

// The table against the PCI ID database scripts/bootstrap installs
// (Debian's pci.ids): the same name wherever the database has the ID, but
// for the two entries whose spelling it has changed since (2023's has
// "GH100[H100 SXM5 80GB]" and a bare "GH100"); an ID newer than the
// installed database is not in it.
TEST(ResourceNameTest, TableAgreesWithThePciIdDatabase) {
  const std::string path = "/usr/share/misc/pci.ids";
  absl::StatusOr<std::string> db = common::ReadFile(path);
  ASSERT_TRUE(db.ok()) << db.status()
                       << " (scripts/bootstrap installs pci.ids)";
  const std::map<uint16_t, std::string> older = {
      {0x2330, "GH100[H100 SXM5 80GB]"}, {0x2321, "GH100"}};
  int compared = 0;
  for (const auto& [id, name] : NvidiaDeviceTable()) {
    const std::string found = FindInPciIds(*db, id);
    if (found.empty()) continue;
    ++compared;
    if (found == name) continue;
    auto it = older.find(id);
    EXPECT_TRUE(it != older.end() && it->second == found)
        << std::hex << id << ": table \"" << name << "\", " << path << " \""
        << found << "\"";
  }
  EXPECT_GE(compared, 25);
}

// docs/passthrough.md: every device ID of the table is in its table, and
// the stable name of a GPU neither the table nor pci.ids knows is the one
// it shows.
TEST(ResourceNameTest, EveryTableIdIsDocumentedAndUnknownIdsAreStable) {
  std::ifstream in(GPULET_SOURCE_DIR "/docs/passthrough.md");
  ASSERT_TRUE(in);
  std::string rows, line;
  bool raw_example = false;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) == 0) rows += line + "\n";
    raw_example |= line.find("`10DE_2B85`") != std::string::npos;
  }
  for (const auto& [id, text] : NvidiaDeviceTable()) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "%04x", id);
    EXPECT_NE(rows.find(hex), std::string::npos) << hex << " " << text;
  }
  EXPECT_TRUE(raw_example);
  EXPECT_FALSE(NvidiaDeviceTable().contains(0x2b85));
  EXPECT_EQ(ResourceName(0x2b85, {}, ""), "10DE_2B85");
  EXPECT_EQ(ResourceName(0x2b85, {}, "/nonexistent/pci.ids"), "10DE_2B85");
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
  EXPECT_EQ(seen.size(), NvidiaDeviceTable().size() - 1);
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
    if (line.rfind("| ", 0) != 0 || line.find("_") == std::string::npos)
      continue;
    for (std::sregex_iterator it(line.begin(), line.end(), code), end;
         it != end; ++it) {
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
  EXPECT_EQ(DeriveResourceName("GH100 [H100 SXM5 80GB]"),
            "GH100_H100_SXM5_80GB");
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
