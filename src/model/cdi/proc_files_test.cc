#include "src/model/cdi/proc_files.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::cdi {
namespace {

using ::testing::HasSubstr;

TEST(MigMinorsTest, FindsInstancesByGpuMinor) {
  absl::StatusOr<MigMinors> minors = MigMinors::Parse(
      "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n\n"
      "gpu3/gi2/access 300\ngpu3/gi2/ci1/access 302\n");
  ASSERT_TRUE(minors.ok()) << minors.status();
  EXPECT_EQ(minors->GpuInstance(0, 1), 12u);
  EXPECT_EQ(minors->ComputeInstance(0, 1, 0), 13u);
  EXPECT_EQ(minors->GpuInstance(3, 2), 300u);
  EXPECT_EQ(minors->ComputeInstance(3, 2, 1), 302u);
  EXPECT_EQ(minors->GpuInstance(1, 1), std::nullopt);
  EXPECT_EQ(minors->ComputeInstance(0, 1, 1), std::nullopt);
  EXPECT_FALSE(minors->empty());
  EXPECT_TRUE(MigMinors::Parse("").value().empty());
}

TEST(MigMinorsTest, RejectsMalformedLines) {
  for (const char* text :
       {"gpu0/gi1/access\n", "gpu0/gi1/access x\n",
        "config 1\ngpu0/gi1/access 1 2\n", "gpu0/gi1/access -1\n"}) {
    absl::StatusOr<MigMinors> minors = MigMinors::Parse(text);
    ASSERT_FALSE(minors.ok()) << text;
    EXPECT_THAT(std::string(minors.status().message()), HasSubstr("line"));
  }
}

TEST(ProcDevicesTest, ReadsCharacterMajorsOnly) {
  std::map<std::string, int64_t> majors = ParseProcDevices(
      "Character devices:\n  1 mem\n195 nvidia-frontend\n235 nvidia-caps\n"
      "511 nvidia-uvm\nbad line\n\nBlock devices:\n  8 sd\n");
  EXPECT_EQ(majors.at("nvidia-caps"), 235);
  EXPECT_EQ(majors.at("nvidia-uvm"), 511);
  EXPECT_EQ(majors.at("mem"), 1);
  EXPECT_EQ(majors.count("sd"), 0u);
}

}  // namespace
}  // namespace gpulet::cdi
