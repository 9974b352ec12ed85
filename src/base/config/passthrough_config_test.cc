// The passthrough section: selectors, resource-name overrides, roots, and
// errors that name the key and position.
#include <ostream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/config/parser.h"

namespace gpulet::config {
namespace {

using ::testing::HasSubstr;
using Kind = PassthroughSelector::Kind;

TEST(PassthroughConfigTest, AbsentIsOffEmptyIsDefaults) {
  absl::StatusOr<Config> off = ParseConfig("version: v1\n", "c.yaml");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->passthrough.has_value());
  absl::StatusOr<Config> on =
      ParseConfig("version: v1\npassthrough: {}\n", "c.yaml");
  ASSERT_TRUE(on.ok()) << on.status();
  ASSERT_TRUE(on->passthrough.has_value());
  EXPECT_EQ(*on->passthrough, Passthrough{});
  ASSERT_EQ(on->passthrough->devices.size(), 1u);
  EXPECT_EQ(on->passthrough->devices[0].kind, Kind::kVfioBound);
}

TEST(PassthroughConfigTest, ReadsEveryKey) {
  absl::StatusOr<Config> c = ParseConfig(R"(version: v1
passthrough:
  devices: [vfio-pci, "3B:00.0", "0001:c1:1f.7", "10de:2330", "0x26B9"]
  resourceNames: {"2330": H100_SXM, "0x20b5": a100 80gb}
  sysRoot: /host/sys
  devRoot: /host/dev
  hostDevRoot: /dev
  pciIds: ""
  resyncPeriod: 5s
  mdevs: true
  ueventSocket: /run/gpulet/uevent.sock
)",
                                         "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  const Passthrough& p = *c->passthrough;
  ASSERT_EQ(p.devices.size(), 5u);
  EXPECT_EQ(p.devices[0].kind, Kind::kVfioBound);
  EXPECT_EQ(p.devices[1].kind, Kind::kPciAddress);
  EXPECT_EQ(p.devices[1].pci_address, "0000:3b:00.0");
  EXPECT_EQ(p.devices[2].pci_address, "0001:c1:1f.7");
  EXPECT_EQ(p.devices[3].kind, Kind::kDeviceId);
  EXPECT_EQ(p.devices[3].device_id, 0x2330);
  EXPECT_EQ(p.devices[4].device_id, 0x26b9);
  EXPECT_EQ(p.resource_names,
            (std::map<uint16_t, std::string>{{0x2330, "H100_SXM"},
                                             {0x20b5, "a100 80gb"}}));
  EXPECT_EQ(p.sys_root, "/host/sys");
  EXPECT_EQ(p.dev_root, "/host/dev");
  EXPECT_EQ(p.host_dev_root, "/dev");
  EXPECT_EQ(p.pci_ids, "");
  EXPECT_EQ(p.resync_period, absl::Seconds(5));
  EXPECT_FALSE(Passthrough{}.resync_period.has_value());
  EXPECT_TRUE(p.mdevs);
  EXPECT_FALSE(Passthrough{}.mdevs);
  EXPECT_EQ(p.uevent_socket, "/run/gpulet/uevent.sock");
  EXPECT_EQ(Passthrough{}.uevent_socket, "");
}

// A vGPU host may give VMs mediated devices only.
TEST(PassthroughConfigTest, MdevsAloneNeedNoGpuSelector) {
  absl::StatusOr<Config> c = ParseConfig(
      "version: v1\npassthrough: {devices: [], mdevs: true}\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->passthrough->devices.empty());
  EXPECT_TRUE(c->passthrough->mdevs);
}

struct BadCase {
  std::string yaml;
  std::string error;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.yaml; }

class PassthroughBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(PassthroughBadTest, NamesTheKey) {
  absl::StatusOr<Config> c =
      ParseConfig("version: v1\npassthrough:\n" + GetParam().yaml, "c.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PassthroughBadTest,
    ::testing::Values(
        BadCase{"  devices: [gpu0]\n",
                "c.yaml:3:13: passthrough.devices[0]: \"gpu0\" is not"},
        BadCase{"  devices: [\"3b:00.9\"]\n", "passthrough.devices[0]"},
        BadCase{"  devices: [\"8086:1234\"]\n", "passthrough.devices[0]"},
        BadCase{"  devices: []\n", "passthrough.devices: selects no GPU"},
        BadCase{"  mdevs: maybe\n", "passthrough.mdevs"},
        BadCase{"  ueventSocket: uevent.sock\n",
                "passthrough.ueventSocket: must be an absolute path"},
        BadCase{"  resourceNames: {\"23x0\": A}\n",
                "passthrough.resourceNames.23x0: \"23x0\" is not an NVIDIA "
                "device ID"},
        BadCase{"  resourceNames: {\"2330\": \"-/.\"}\n",
                "passthrough.resourceNames.2330: \"-/.\" is not a resource "
                "name suffix"},
        BadCase{"  resourceNames: {\"2330\": A, \"0x2330\": B}\n",
                "device ID 2330 is named twice"},
        BadCase{"  resourceNames: [a]\n",
                "passthrough.resourceNames: expected a map"},
        BadCase{"  sysRoot: sys\n",
                "passthrough.sysRoot: must be an absolute path"},
        BadCase{"  resyncPeriod: 10ms\n",
                "passthrough.resyncPeriod: must be at least 1s"},
        BadCase{"  bogus: 1\n", "passthrough.bogus"}));

}  // namespace
}  // namespace gpulet::config
