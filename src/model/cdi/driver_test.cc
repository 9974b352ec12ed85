#include "src/model/cdi/driver.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/testing/test_root.h"

namespace gpulet::cdi {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempRoot;

const std::string kVersion = GPULET_CDI_FAKE_DRIVER_VERSION;

std::string FakeLib(const std::string& stem) {
  return std::string(GPULET_CDI_FAKE_LIB_DIR) + "/" + stem + "." + kVersion;
}

std::vector<std::string> Paths(const std::vector<HostFile>& files) {
  std::vector<std::string> paths;
  for (const HostFile& f : files) paths.push_back(f.path);
  return paths;
}

TEST(DiscoverDriverTest, ErrorsNameTheRoot) {
  TempRoot root;
  root.Write("/file", "x");
  struct Case {
    std::string driver_root, dev_root, version, error;
    absl::StatusCode code;
  };
  const Case cases[] = {
      {root.Under("/missing"), "", kVersion,
       "driver root " + root.Under("/missing"), absl::StatusCode::kNotFound},
      {root.Under("/file"), "", kVersion, "not a directory",
       absl::StatusCode::kNotFound},
      {root.path(), root.Under("/nodev"), kVersion,
       "dev root " + root.Under("/nodev"), absl::StatusCode::kNotFound},
      {root.path(), "", "", "driver version is empty",
       absl::StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Driver> driver =
        DiscoverDriver(c.driver_root, c.dev_root, c.version);
    ASSERT_FALSE(driver.ok()) << c.error;
    EXPECT_EQ(driver.status().code(), c.code) << driver.status();
    EXPECT_THAT(std::string(driver.status().message()), HasSubstr(c.error));
  }
}

TEST(DiscoverDriverTest, UnreadableRootIsPermissionDenied) {
  TempRoot root;
  root.MakeDir("/locked");
  ::chmod(root.path().c_str(), 0755);
  ::chmod(root.Under("/locked").c_str(), 0);
  // Root reads every directory: as root, look as an unprivileged user (the
  // effective uid only, which drops the effective capabilities; the saved
  // uid takes it back).
  const bool as_nobody = testing::IsRoot();
  if (as_nobody) {
    ASSERT_EQ(::seteuid(65534), 0);
  }
  absl::StatusOr<Driver> driver =
      DiscoverDriver(root.Under("/locked"), "", kVersion);
  if (as_nobody) {
    ASSERT_EQ(::seteuid(0), 0);
  }
  ::chmod(root.Under("/locked").c_str(), 0755);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(driver.status().message()),
              HasSubstr(root.Under("/locked")));
}

TEST(DiscoverDriverTest, FindsVersionedLibrariesAndBinariesInStandardDirs) {
  TempRoot root;
  root.Copy(FakeLib("libcuda.so"), "/usr/lib64/libcuda.so." + kVersion);
  root.Copy(FakeLib("libnvidia-ml.so"), "/usr/lib/libnvidia-ml.so." + kVersion);
  root.Copy(FakeLib("libcuda.so"), "/usr/lib64/libnvidia-opencl.so.1.2.3");
  root.Write("/usr/bin/nvidia-smi", "#!/bin/sh\n");
  root.Write("/usr/bin/nvidia-settings", "#!/bin/sh\n");
  root.Write("/etc/ld.so.cache", "garbage");  // logged, then ignored
  absl::StatusOr<Driver> driver = DiscoverDriver(root.path(), "", kVersion);
  ASSERT_TRUE(driver.ok()) << driver.status();
  EXPECT_EQ(driver->version, kVersion);
  EXPECT_EQ(driver->root, root.path());
  EXPECT_EQ(driver->dev_root, root.path());
  EXPECT_THAT(Paths(driver->libraries),
              ElementsAre("/usr/lib/libnvidia-ml.so." + kVersion,
                          "/usr/lib64/libcuda.so." + kVersion));
  EXPECT_EQ(driver->libraries[0].host_path,
            root.Under("/usr/lib/libnvidia-ml.so." + kVersion));
  EXPECT_EQ(driver->libraries[0].capability, "utility");
  EXPECT_EQ(driver->libraries[1].capability, "compute");
  EXPECT_THAT(Paths(driver->binaries), ElementsAre("/usr/bin/nvidia-smi"));
  EXPECT_TRUE(driver->device_nodes.empty());
  EXPECT_TRUE(driver->mig_minors.empty());
}

TEST(DiscoverDriverTest, FindsLibrariesThroughLdSoCache) {
  if (!testing::IsRoot()) {
    GTEST_SKIP() << "ldconfig -r chroots: needs root";
  }
  TempRoot root;
  const std::string dir = "/opt/nvidia/lib";  // not a standard directory
  for (const char* stem :
       {"libcuda.so", "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so"}) {
    root.Copy(FakeLib(stem), dir + "/" + stem + "." + kVersion);
  }
  root.Write("/etc/ld.so.conf", dir + "\n");
  std::string command = "ldconfig -r " + root.path() + " 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0);
  absl::StatusOr<Driver> driver = DiscoverDriver(root.path(), "", kVersion);
  ASSERT_TRUE(driver.ok()) << driver.status();
  EXPECT_THAT(Paths(driver->libraries),
              ElementsAre(dir + "/libcuda.so." + kVersion,
                          dir + "/libnvidia-nvvm.so." + kVersion,
                          dir + "/libnvidia-ptxjitcompiler.so." + kVersion));
}

TEST(DiscoverDriverTest, StatsDeviceNodesUnderTheDevRoot) {
  if (!testing::IsRoot()) {
    GTEST_SKIP() << "mknod needs root";
  }
  TempRoot driver_root, dev_root;
  ASSERT_TRUE(dev_root.Mknod("/dev/nvidiactl", 195, 255));
  ASSERT_TRUE(dev_root.Mknod("/dev/nvidia-uvm", 511, 0));
  ASSERT_TRUE(dev_root.Mknod("/dev/nvidia3", 195, 3));
  ASSERT_TRUE(dev_root.Mknod("/dev/nvidia-caps/nvidia-cap12", 235, 12));
  ASSERT_TRUE(dev_root.Mknod("/dev/nvidia-foo", 1, 1));  // not NVIDIA's
  dev_root.Write("/dev/nvidia4", "");                    // not a device
  absl::StatusOr<Driver> driver =
      DiscoverDriver(driver_root.path(), dev_root.path(), kVersion);
  ASSERT_TRUE(driver.ok()) << driver.status();
  std::vector<std::string> paths;
  for (const HostDeviceNode& n : driver->device_nodes) paths.push_back(n.path);
  EXPECT_THAT(paths,
              ElementsAre("/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-uvm",
                          "/dev/nvidia3", "/dev/nvidiactl"));
  const HostDeviceNode* ctl = driver->FindNode("/dev/nvidiactl");
  ASSERT_NE(ctl, nullptr);
  EXPECT_EQ(*ctl,
            (HostDeviceNode{"/dev/nvidiactl", dev_root.Under("/dev/nvidiactl"),
                            "c", 195, 255, 0666}));
  EXPECT_EQ(driver->FindNode("/dev/nvidia0"), nullptr);
}

TEST(DiscoverDriverTest, ReadsProcFiles) {
  TempRoot root;
  root.Write("/proc/driver/nvidia-caps/mig-minors",
             "config 1\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n");
  root.Write("/proc/devices", "Character devices:\n235 nvidia-caps\n");
  absl::StatusOr<Driver> driver = DiscoverDriver(root.path(), "", kVersion);
  ASSERT_TRUE(driver.ok()) << driver.status();
  EXPECT_EQ(driver->mig_minors.GpuInstance(0, 1), 12u);
  EXPECT_EQ(driver->char_majors.at("nvidia-caps"), 235);

  root.Write("/proc/driver/nvidia-caps/mig-minors", "gpu0/gi1/access\n");
  driver = DiscoverDriver(root.path(), "", kVersion);
  ASSERT_FALSE(driver.ok());
  EXPECT_THAT(std::string(driver.status().message()),
              HasSubstr(root.Under("/proc/driver/nvidia-caps/mig-minors")));
}

TEST(FindDriverBinaryTest, FirstStandardDirectoryThatHasIt) {
  TempRoot root;
  root.Write("/usr/local/bin/nvidia-cuda-mps-control", "#!/bin/sh\n");
  root.Write("/usr/sbin/nvidia-cuda-mps-control", "#!/bin/sh\n");
  absl::StatusOr<std::string> found =
      FindDriverBinary(root.path(), "nvidia-cuda-mps-control");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, root.path() + "/usr/sbin/nvidia-cuda-mps-control");
  absl::StatusOr<std::string> missing =
      FindDriverBinary(root.path(), "nvidia-smi");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_EQ(missing.status().message(),
            "nvidia-smi not found in /usr/bin, /usr/sbin, /bin, /sbin, "
            "/usr/local/bin under the driver root " +
                root.path());
}

TEST(UnderRootTest, JoinsWithoutDoubleSlashes) {
  EXPECT_EQ(UnderRoot("/", "/dev/nvidia0"), "/dev/nvidia0");
  EXPECT_EQ(UnderRoot("", "/dev/nvidia0"), "/dev/nvidia0");
  EXPECT_EQ(UnderRoot("/run/nvidia/driver/", "/usr/lib"),
            "/run/nvidia/driver/usr/lib");
}

}  // namespace
}  // namespace gpulet::cdi
