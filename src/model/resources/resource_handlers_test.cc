#include "src/model/resources/resource_handlers.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::resources {
namespace {

using ::testing::ElementsAre;

ResourceSpec Spec(std::string name, bool shared) {
  ResourceSpec spec;
  spec.resource_name = std::move(name);
  pluginapi::Device d;
  d.id = shared ? "GPU-a::0" : "GPU-a";
  d.replica = shared ? 0 : -1;
  spec.devices.push_back(d);
  return spec;
}

TEST(MakeHostViewTest, DevRootDefaultsToDriverRoot) {
  config::Config config;
  config.flags.nvidia_driver_root = "/run/nvidia/driver";
  config.flags.plugin.container_driver_root = "/nonexistent-driver-root";
  HostView view = MakeHostView(config);
  EXPECT_EQ(view.dev_root, "/run/nvidia/driver");
  EXPECT_EQ(view.probe_root, "/run/nvidia/driver");
  config.flags.nvidia_dev_root = "/";
  EXPECT_EQ(MakeHostView(config).dev_root, "/");
}

TEST(MakeHostViewTest, ProbesThroughTheContainerDriverRoot) {
  config::Config config;
  config.flags.nvidia_driver_root = "/run/nvidia/driver";
  config.flags.plugin.container_driver_root = "/tmp";
  HostView view = MakeHostView(config);
  EXPECT_EQ(view.dev_root, "/run/nvidia/driver");
  EXPECT_EQ(view.probe_root, "/tmp");
}

TEST(AllocateOptionsForTest, CopiesFlags) {
  config::Config config;
  config.flags.plugin.device_list_strategy = {
      config::DeviceListStrategy::kVolumeMounts,
      config::DeviceListStrategy::kCdiCri};
  config.flags.plugin.pass_device_specs = true;
  config.flags.gds_enabled = true;
  config.flags.plugin.cdi_annotation_prefix = "cdi.example.com/";
  HostView view{"/host-dev", "/nonexistent", "/"};
  view.own_root = "/nonexistent-own-root";
  auto o = AllocateOptionsFor(config, Spec("nvidia.com/gpu", false), view);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(o->strategies,
              ElementsAre(allocation::DeviceListStrategy::kVolumeMounts,
                          allocation::DeviceListStrategy::kCdiCri));
  EXPECT_TRUE(o->pass_device_specs);
  EXPECT_TRUE(o->gds_enabled);
  EXPECT_FALSE(o->mofed_enabled);
  EXPECT_EQ(o->dev_root, "/host-dev");
  EXPECT_EQ(o->cdi_annotation_prefix, "cdi.example.com/");
  EXPECT_EQ(o->resource_name, "nvidia.com/gpu");
  ASSERT_TRUE(o->control_nodes_probe);
  EXPECT_TRUE(o->control_nodes_probe().empty());
  EXPECT_FALSE(o->fail_requests_greater_than_one);
}

TEST(AllocateOptionsForTest, SharedRequestLimitOnlyOnSharedResources) {
  struct Case {
    std::string name;
    bool mps;
    bool fail_flag;
    bool shared;
    bool want_limit;
  } cases[] = {
      {"time-slicing with the flag", false, true, true, true},
      {"time-slicing without", false, false, true, false},
      {"MPS always", true, false, true, true},
      {"unshared resource beside", false, true, false, false},
  };
  for (const Case& c : cases) {
    config::Config config;
    config::ReplicatedResources section;
    section.fail_requests_greater_than_one = c.fail_flag;
    section.resources.push_back({"nvidia.com/gpu", "", {}, 2});
    if (c.mps) {
      config.sharing.mps = section;
      config.flags.mps_root = "/run/nvidia/mps";
    } else {
      config.sharing.time_slicing = section;
    }
    auto o = AllocateOptionsFor(config, Spec("nvidia.com/gpu", c.shared),
                                HostView{"/", "/nonexistent", "/"});
    ASSERT_TRUE(o.ok()) << c.name << ": " << o.status();
    EXPECT_EQ(o->fail_requests_greater_than_one, c.want_limit) << c.name;
    EXPECT_EQ(o->mps_root, c.mps && c.shared ? "/run/nvidia/mps" : "")
        << c.name;
  }
}

TEST(AllocateOptionsForTest, RequiredImexChannelMissingIsAnError) {
  config::Config config;
  config.imex.channel_ids = {0};
  config.imex.required = true;
  auto o = AllocateOptionsFor(config, Spec("nvidia.com/gpu", false),
                              HostView{"/x", "/nonexistent-dev-root", "/"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(MakeResourceOptionsTest, NoMigMinorsNoCapsNodes) {
  ResourceOptions options =
      MakeResourceOptions("gpulet", HostView{"/", "/", "/nonexistent-proc"});
  EXPECT_EQ(options.socket_prefix, "gpulet");
  EXPECT_FALSE(options.mig_caps_nodes);
}

}  // namespace
}  // namespace gpulet::resources
