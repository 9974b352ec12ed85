#include "src/plugin/daemon/cdi_writer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/cdi/spec_file.h"
#include "src/model/testing/test_hooks.h"
#include "src/model/testing/test_root.h"

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
  spec.edits.mounts = {
      {"/driver-root/usr/lib/libcuda.so.1", "/usr/lib/libcuda.so.1", "", {}},
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

// The spec `gpulet plugin` writes: its ld-cache hook (there because the
// driver root has a library) has an explicit env, so it never runs with the
// container's environment (docs/runtime.md, "Threat model").
TEST(WriteCdiSpecTest, EveryHookOfThePluginSpecHasAnEnv) {
  cdi::testing::TempRoot root;
  root.Write("/usr/lib64/libcuda.so.550.54.15", "");
  device::Node node;
  node.driver_version = "550.54.15";
  node.gpus.emplace_back();
  node.gpus[0].uuid = "GPU-aaaa";
  config::Config config;
  resources::HostView view;
  view.driver_root = root.path();
  view.probe_root = root.path();
  view.dev_root = root.path();
  absl::StatusOr<std::string> path =
      WriteCdiSpec(node, config, view, root.Under("/cdi"));
  ASSERT_TRUE(path.ok()) << path.status();
  absl::StatusOr<cdi::Spec> spec = cdi::ReadSpecFile(*path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->edits.hooks.size(), 1u);
  cdi::testing::ExpectEveryHookConfined(*spec);
}

}  // namespace
}  // namespace gpulet::daemon
