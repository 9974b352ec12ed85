// The kernel's uevent datagrams, parsed, and which of them make the
// passthrough watcher re-read sysfs.
#include "src/gpu/health/uevent.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace gpulet::health {
namespace {

std::string Datagram(std::initializer_list<std::string> fields) {
  std::string out;
  for (const std::string& f : fields) {
    out += f;
    out.push_back('\0');
  }
  return out;
}

TEST(UeventTest, ParsesTheKernelsFormat) {
  std::optional<Uevent> e = ParseUevent(Datagram(
      {"bind@/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1", "ACTION=bind",
       "DEVPATH=/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1", "SUBSYSTEM=pci",
       "DRIVER=vfio-pci", "PCI_SLOT_NAME=0000:3b:00.1", "SEQNUM=4711"}));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->action, "bind");
  EXPECT_EQ(e->subsystem, "pci");
  EXPECT_EQ(e->driver, "vfio-pci");
  EXPECT_EQ(e->devpath, "/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1");
  EXPECT_TRUE(AffectsPassthrough(*e));
}

TEST(UeventTest, OnlyBindingsAndDevicesComingOrGoingCount) {
  auto event = [](const std::string& action, const std::string& subsystem) {
    return Uevent{action, "/devices/x", subsystem, ""};
  };
  EXPECT_TRUE(AffectsPassthrough(event("unbind", "pci")));
  EXPECT_TRUE(AffectsPassthrough(event("add", "pci")));
  EXPECT_TRUE(AffectsPassthrough(event("remove", "pci")));
  EXPECT_TRUE(AffectsPassthrough(event("add", "mdev")));
  EXPECT_TRUE(AffectsPassthrough(event("remove", "mdev")));
  EXPECT_FALSE(AffectsPassthrough(event("change", "pci")));
  EXPECT_FALSE(AffectsPassthrough(event("bind", "usb")));
  EXPECT_FALSE(AffectsPassthrough(event("change", "power_supply")));
}

TEST(UeventTest, RejectsWhatIsNotAKernelUevent) {
  EXPECT_FALSE(ParseUevent("").has_value());
  EXPECT_FALSE(ParseUevent(std::string("libudev\0\xfe\xed", 10)).has_value());
  EXPECT_FALSE(ParseUevent(Datagram({"no header", "ACTION=bind"})));
  EXPECT_FALSE(ParseUevent(Datagram({"bind@/x", "SUBSYSTEM=pci"})));
  EXPECT_FALSE(ParseUevent(std::string("bind@/x\0ACTION=bind\0DEVPATH", 27)));
}

TEST(UeventTest, RelayPathTooLongIsAnError) {
  absl::StatusOr<common::UniqueFd> fd = OpenUeventRelay(std::string(200, 'x'));
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.status().message().find("longer than"), std::string::npos);
}

// A path that holds something else than a socket is left alone.
TEST(UeventTest, RelayNeverRemovesAFileThatIsNotASocket) {
  char dir[] = "/tmp/gpulet-uevent-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/config.yaml";
  std::ofstream(file) << "version: v1\n";
  absl::StatusOr<common::UniqueFd> fd = OpenUeventRelay(file);
  EXPECT_FALSE(fd.ok());
  EXPECT_TRUE(std::filesystem::exists(file));
  const std::string socket = std::string(dir) + "/uevent.sock";
  ASSERT_TRUE(OpenUeventRelay(socket).ok());
  // A previous run's socket is replaced.
  EXPECT_TRUE(OpenUeventRelay(socket).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpulet::health
