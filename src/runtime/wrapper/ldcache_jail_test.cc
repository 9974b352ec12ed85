#include "src/runtime/wrapper/ldcache_jail.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// What runc's mount namespace shows for a container being created, with
// the runtime side's own mounts around it.
constexpr char kMountinfo[] =
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "23 22 0:21 / /proc rw,nosuid shared:2 - proc proc rw\n"
    "24 22 0:22 / /sys rw,nosuid shared:3 - sysfs sysfs rw\n"
    "90 22 254:0 /tmp/b/rootfs /tmp/b/rootfs rw master:1 - ext4 /dev/vda rw\n"
    "91 90 0:50 / /tmp/b/rootfs/proc rw - proc proc rw\n"
    "92 90 0:51 / /tmp/b/rootfs/dev rw - tmpfs tmpfs rw\n"
    "93 90 0:22 / /tmp/b/rootfs/sys ro - sysfs sysfs ro\n"
    "94 91 0:51 /null /tmp/b/rootfs/proc/kcore rw - tmpfs tmpfs rw\n"
    "95 90 0:21 /sys /tmp/b/rootfs/host\\040proc/sys rw - proc proc rw\n"
    "96 90 254:0 /lib /tmp/b/rootfs/usr/lib/libcuda.so.1 ro - ext4 /dev/vda\n"
    "97 22 0:52 / /tmp/b/rootfs2/proc rw - proc proc rw\n"
    "98 90 0:53 / /tmp/b/rootfs/opt rw shared:9 master:3 - proc none rw\n"
    "malformed line\n";

TEST(KernelMountsUnderTest, ProcAndSysfsBelowTheRootOnly) {
  EXPECT_THAT(KernelMountsUnder(kMountinfo, "/tmp/b/rootfs"),
              ElementsAre("/proc", "/sys", "/host proc/sys", "/opt"));
  EXPECT_THAT(KernelMountsUnder(kMountinfo, "/tmp/b/rootfs2"),
              ElementsAre("/proc"));
  EXPECT_THAT(KernelMountsUnder(kMountinfo, "/tmp/none"), IsEmpty());
  EXPECT_THAT(KernelMountsUnder("5 1 0:5 / /r rw - proc proc rw\n", "/r"),
              ElementsAre("/"));
  EXPECT_THAT(KernelMountsUnder("", "/tmp/b/rootfs"), IsEmpty());
}

}  // namespace
}  // namespace gpulet::runtime
