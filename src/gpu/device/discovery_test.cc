// Discovery's NVML path runs against the simulator in
// test/integration/discovery_sim_test.cc; here only the sysfs fallback.
#include "src/gpu/device/discovery.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "src/base/common/file_util.h"

namespace gpulet::device {
namespace {

class SysfsNumaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/gpulet-numa-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    root_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void WriteNuma(const std::string& device, const std::string& contents) {
    Write(device, "numa_node", contents);
  }
  void Write(const std::string& device, const std::string& file,
             const std::string& contents) {
    const std::string dir = root_ + "/bus/pci/devices/" + device;
    std::filesystem::create_directories(dir);
    ASSERT_TRUE(common::WriteFileAtomic(dir + "/" + file, contents).ok());
  }

  std::string root_;
};

TEST_F(SysfsNumaTest, ReadsTheNodeUnderTheSysfsName) {
  WriteNuma("0000:b7:00.0", "1\n");
  EXPECT_EQ(ReadSysfsNumaNode(root_, "00000000:B7:00.0"), 1);
  EXPECT_EQ(ReadSysfsNumaNode(root_, "0000:b7:00.0"), 1);
}

TEST_F(SysfsNumaTest, MinusOneMissingOrGarbageMeansNone) {
  WriteNuma("0000:18:00.0", "-1\n");
  WriteNuma("0000:19:00.0", "zero\n");
  EXPECT_EQ(ReadSysfsNumaNode(root_, "00000000:18:00.0"), std::nullopt);
  EXPECT_EQ(ReadSysfsNumaNode(root_, "00000000:19:00.0"), std::nullopt);
  EXPECT_EQ(ReadSysfsNumaNode(root_, "00000000:1A:00.0"), std::nullopt);
  EXPECT_EQ(ReadSysfsNumaNode(root_, "garbage"), std::nullopt);
}

TEST_F(SysfsNumaTest, ReadsThePciClass) {
  Write("0000:b7:00.0", "class", "0x030200\n");
  Write("0000:18:00.0", "class", "\n");
  EXPECT_EQ(ReadSysfsPciClass(root_, "00000000:B7:00.0"), "0x030200");
  EXPECT_EQ(ReadSysfsPciClass(root_, "00000000:18:00.0"), std::nullopt);
  EXPECT_EQ(ReadSysfsPciClass(root_, "00000000:1A:00.0"), std::nullopt);
  EXPECT_EQ(ReadSysfsPciClass(root_, "garbage"), std::nullopt);
}

}  // namespace
}  // namespace gpulet::device
