#include "src/gpu/device/pci_address.h"

#include "gtest/gtest.h"

namespace gpulet::device {
namespace {

TEST(PciAddressTest, ParsesEverySpelling) {
  const PciAddress want{0, 0x18, 0x1f, 7};
  for (const char* text :
       {"00000000:18:1F.7", "0000:18:1f.7", "18:1f.7", "0:18:1F.7"}) {
    EXPECT_EQ(ParsePciAddress(text), want) << text;
  }
  EXPECT_EQ(ParsePciAddress("0001:b7:00.0"), (PciAddress{1, 0xb7, 0, 0}));
}

TEST(PciAddressTest, RejectsGarbage) {
  for (const char* text :
       {"", "18", "18:00", "x:18:00.0", "0:18:00.8", "0:18:20.0", "0:118:00.0",
        "000000000:18:00.0", "0:18:00.0.1", "0:18:-1.0"}) {
    EXPECT_EQ(ParsePciAddress(text), std::nullopt) << text;
  }
}

TEST(PciAddressTest, PrintsNvmlAndSysfsForms) {
  const PciAddress a{0, 0xb7, 0x1a, 3};
  EXPECT_EQ(NvmlBusId(a), "00000000:B7:1A.3");
  EXPECT_EQ(SysfsBusId(a), "0000:b7:1a.3");
}

TEST(PciAddressTest, CanonicalBusIdNormalisesOrPassesThrough) {
  EXPECT_EQ(CanonicalBusId("0000:b7:00.0"), "00000000:B7:00.0");
  EXPECT_EQ(CanonicalBusId("00000000:B7:00.0"), "00000000:B7:00.0");
  EXPECT_EQ(CanonicalBusId("not-a-bus-id"), "not-a-bus-id");
}

}  // namespace
}  // namespace gpulet::device
