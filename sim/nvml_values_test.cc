#include "sim/nvml_values.h"

#include <cstring>

#include "gtest/gtest.h"

namespace gpulet::sim {
namespace {

TEST(ParsePciBusIdTest, AcceptsNvmlForms) {
  PciAddress want{0, 0x07, 0, 0};
  EXPECT_EQ(ParsePciBusId("0000:07:00.0"), want);
  EXPECT_EQ(ParsePciBusId("00000000:07:00.0"), want);
  EXPECT_EQ(ParsePciBusId("07:00.0"), want);
  EXPECT_EQ(ParsePciBusId("0:7:0"), want);
  EXPECT_EQ(ParsePciBusId("0000:c1:1f.7"), (PciAddress{0, 0xC1, 0x1F, 7}));
  EXPECT_EQ(ParsePciBusId("0001:C1:00.0"), (PciAddress{1, 0xC1, 0, 0}));
}

TEST(ParsePciBusIdTest, RejectsGarbage) {
  for (const char* text : {"", "07:00", "0000:07:00.0.0", "zz:00.0",
                           "0000:100:00.0", "0000:07:20.0", "0000:07:00.8",
                           "1:2:3:4", "0x0:07:00.0", "000000000:07:00.0"}) {
    EXPECT_FALSE(ParsePciBusId(text).has_value()) << text;
  }
}

TEST(PciInfoTest, FormatsLikeNvml) {
  PciAddress a{0, 0xC1, 0, 0};
  EXPECT_EQ(FormatPciBusId(a), "00000000:C1:00.0");
  EXPECT_EQ(FormatPciBusIdLegacy(a), "0000:C1:00.0");
  nvmlPciInfo_t info;
  FillPciInfo(a, 0x20B010DE, 0x134F10DE, &info);
  EXPECT_STREQ(info.busId, "00000000:C1:00.0");
  EXPECT_STREQ(info.busIdLegacy, "0000:C1:00.0");
  EXPECT_EQ(info.bus, 0xC1u);
  EXPECT_EQ(info.pciDeviceId, 0x20B010DEu);
  EXPECT_EQ(info.pciSubSystemId, 0x134F10DEu);
}

TEST(PciInfoTest, LegacyLayoutStaysInsideItsSize) {
  unsigned char buffer[sizeof(nvmlPciInfo_t)];
  std::memset(buffer, 0xAB, sizeof(buffer));
  FillLegacyPciInfo(PciAddress{0, 7, 0, 0}, 1, 2, buffer);
  EXPECT_STREQ(reinterpret_cast<char*>(buffer), "0000:07:00.0");
  unsigned int bus = 0;
  std::memcpy(&bus, buffer + 20, sizeof(bus));
  EXPECT_EQ(bus, 7u);
  for (size_t i = kLegacyPciInfoBytes; i < sizeof(buffer); ++i) {
    EXPECT_EQ(buffer[i], 0xAB) << i;
  }
}

TEST(CopyStringTest, SizeRules) {
  char buffer[8];
  EXPECT_EQ(CopyString("abc", nullptr, 8), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(CopyString("abcdefgh", buffer, 8), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(CopyString("abcdefg", buffer, 8), NVML_SUCCESS);
  EXPECT_STREQ(buffer, "abcdefg");
  EXPECT_EQ(CopyString("", buffer, 1), NVML_SUCCESS);
  EXPECT_STREQ(buffer, "");
}

TEST(CpuSetTest, SetsBitsPerWordAndClearsTheRest) {
  unsigned long words[3] = {~0UL, ~0UL, ~0UL};
  FillCpuSet({0, 2, 64, 130, 500}, 3, words);
  EXPECT_EQ(words[0], 0x5UL);
  EXPECT_EQ(words[1], 0x1UL);
  EXPECT_EQ(words[2], 0x4UL);
}

TEST(ErrorTextTest, KnownAndUnknownCodes) {
  EXPECT_STREQ(NvmlErrorText(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
  EXPECT_STREQ(NvmlErrorText(NVML_ERROR_UNKNOWN), "Unknown Error");
  EXPECT_STREQ(NvmlErrorText(4242), "Unknown Error");
  EXPECT_STREQ(NvmlReturnName(NVML_ERROR_TIMEOUT), "NVML_ERROR_TIMEOUT");
  EXPECT_EQ(NvmlReturnName(4242), nullptr);
}

}  // namespace
}  // namespace gpulet::sim
