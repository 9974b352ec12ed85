#include "src/daemon/cdi_writer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::daemon {
namespace {

TEST(WantsCdiSpecTest, OnlyForCdiStrategies) {
  config::Config c;
  EXPECT_FALSE(WantsCdiSpec(c));
  c.flags.plugin.device_list_strategy = {
      config::DeviceListStrategy::kEnvvar,
      config::DeviceListStrategy::kCdiAnnotations};
  EXPECT_TRUE(WantsCdiSpec(c));
  c.flags.plugin.device_list_strategy = {config::DeviceListStrategy::kCdiCri};
  EXPECT_TRUE(WantsCdiSpec(c));
  c.flags.plugin.device_list_strategy = {
      config::DeviceListStrategy::kVolumeMounts};
  EXPECT_FALSE(WantsCdiSpec(c));
}

TEST(RebaseHostPathsTest, RewritesOnlyPathsUnderTheRoot) {
  cdi::Spec spec;
  spec.edits.mounts = {{"/driver-root/usr/lib/libcuda.so.1", "/usr/lib/libcuda.so.1", "", {}},
                       {"/other/file", "/x", "", {}},
                       {"/driver-rootless/y", "/y", "", {}}};
  cdi::DeviceNode node;
  node.path = "/dev/nvidia0";
  node.host_path = "/driver-root/dev/nvidia0";
  spec.devices.emplace_back();
  spec.devices[0].name = "0";
  spec.devices[0].edits.device_nodes = {node};
  RebaseHostPaths(spec, "/driver-root", "/");
  EXPECT_EQ(spec.edits.mounts[0].host_path, "/usr/lib/libcuda.so.1");
  EXPECT_EQ(spec.edits.mounts[1].host_path, "/other/file");
  EXPECT_EQ(spec.edits.mounts[2].host_path, "/driver-rootless/y");
  EXPECT_EQ(spec.devices[0].edits.device_nodes[0].host_path, "/dev/nvidia0");
  RebaseHostPaths(spec, "/usr", "/run/nvidia/driver/");
  EXPECT_EQ(spec.edits.mounts[0].host_path,
            "/run/nvidia/driver/lib/libcuda.so.1");
}

}  // namespace
}  // namespace gpulet::daemon
