#include "src/model/allocation/allocate_response.h"

#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <functional>

#include "absl/strings/str_replace.h"
#include "src/model/allocation/allocate_cdi.h"

namespace gpulet::allocation {

using pluginapi::AllocateHandler;
using pluginapi::Device;
using pluginapi::DeviceSnapshot;
namespace {

using ::testing::HasSubstr;
using DLS = DeviceListStrategy;

Device MakeDevice(std::string id, std::string visible, int replica,
                  std::vector<std::string> nodes) {
  Device d;
  d.id = std::move(id);
  d.visible_id = std::move(visible);
  d.replica = replica;
  d.device_nodes = std::move(nodes);
  return d;
}

// GPU-a (minor 0), GPU-b (minor 3), GPU-r (minor 5) shared in two
// replicas, two MIG devices on GPU 7 (minor 7) with their caps nodes. Under
// the index strategy the lead fills visible_id with "i" / "i:j".
DeviceSnapshot Snapshot(bool index) {
  DeviceSnapshot s;
  s.version = 1;
  s.devices = {
      MakeDevice("GPU-a", index ? "0" : "GPU-a", -1, {"/dev/nvidia0"}),
      MakeDevice("GPU-b", index ? "1" : "GPU-b", -1, {"/dev/nvidia3"}),
      MakeDevice("GPU-r::0", index ? "2" : "GPU-r", 0, {"/dev/nvidia5"}),
      MakeDevice("GPU-r::1", index ? "2" : "GPU-r", 1, {"/dev/nvidia5"}),
      MakeDevice("MIG-m1", index ? "3:1" : "MIG-m1", -1,
                 {"/dev/nvidia7", "/dev/nvidia-caps/nvidia-cap12",
                  "/dev/nvidia-caps/nvidia-cap13"}),
      MakeDevice("MIG-m2", index ? "3:2" : "MIG-m2", -1,
                 {"/dev/nvidia7", "/dev/nvidia-caps/nvidia-cap21",
                  "/dev/nvidia-caps/nvidia-cap22"}),
  };
  return s;
}

struct Case {
  std::string name;
  std::function<void(AllocateOptions&)> configure;
  std::vector<std::string> ids;
  // ContainerAllocateResponse in text format; "$KEY" stands for the
  // deterministic annotation ID of (resource, ids).
  std::string want;
  bool index = false;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

void Strategies(AllocateOptions& o, std::vector<DLS> s) { o.strategies = s; }

class AllocateResponseTable : public ::testing::TestWithParam<Case> {};

TEST_P(AllocateResponseTable, MatchesNvidia) {
  const Case& c = GetParam();
  AllocateOptions options;
  if (c.configure) c.configure(options);
  ASSERT_TRUE(ValidateAllocateOptions(options).ok());
  absl::StatusOr<v1beta1::ContainerAllocateResponse> got =
      BuildAllocateResponse(options, Snapshot(c.index), c.ids);
  ASSERT_TRUE(got.ok()) << got.status();

  const std::string text = absl::StrReplaceAll(
      c.want, {{"$KEY", AllocationUid(options.resource_name, c.ids)}});
  v1beta1::ContainerAllocateResponse want;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &want))
      << text;
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(want, *got)) << diff << "\ngot:\n"
                                          << got->DebugString();
}

constexpr char kCtl[] =
    R"(devices { container_path: "/dev/nvidiactl" host_path: "/run/nvidia/driver/dev/nvidiactl" permissions: "rw" }
       devices { container_path: "/dev/nvidia-uvm" host_path: "/run/nvidia/driver/dev/nvidia-uvm" permissions: "rw" })";

INSTANTIATE_TEST_SUITE_P(
    Strategies, AllocateResponseTable,
    ::testing::Values(
        Case{"envvar_single",
             nullptr,
             {"GPU-a"},
             R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-a" })"},
        Case{
            "envvar_request_order_replicas_once",
            nullptr,
            {"GPU-b", "GPU-r::1", "GPU-a", "GPU-r::0"},
            R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-b,GPU-r,GPU-a" })"},
        Case{
            "envvar_mig",
            nullptr,
            {"MIG-m2", "MIG-m1"},
            R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "MIG-m2,MIG-m1" })"},
        Case{
            "volume_mounts",
            [](auto& o) { Strategies(o, {DLS::kVolumeMounts}); },
            {"GPU-a", "GPU-r::0", "GPU-r::1"},
            R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "/var/run/nvidia-container-devices" }
                mounts { container_path: "/var/run/nvidia-container-devices/GPU-a" host_path: "/dev/null" }
                mounts { container_path: "/var/run/nvidia-container-devices/GPU-r" host_path: "/dev/null" })"},
        Case{"cdi_annotations",
             [](auto& o) { Strategies(o, {DLS::kCdiAnnotations}); },
             {"GPU-a", "GPU-b"},
             R"(annotations { key: "cdi.k8s.io/nvidia-device-plugin_$KEY"
                              value: "k8s.device-plugin.nvidia.com/gpu=GPU-a,k8s.device-plugin.nvidia.com/gpu=GPU-b" })"},
        Case{"cdi_cri",
             [](auto& o) { Strategies(o, {DLS::kCdiCri}); },
             {"MIG-m1", "GPU-r::0"},
             R"(cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=MIG-m1" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=GPU-r" })"},
        Case{
            "envvar_and_volume_mounts_mounts_win",
            [](auto& o) {
              Strategies(o, {DLS::kEnvvar, DLS::kVolumeMounts});
            },
            {"GPU-b"},
            R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "/var/run/nvidia-container-devices" }
                mounts { container_path: "/var/run/nvidia-container-devices/GPU-b" host_path: "/dev/null" })"},
        Case{
            "cdi_annotations_and_cdi_cri",
            [](auto& o) {
              Strategies(o, {DLS::kCdiCri, DLS::kCdiAnnotations});
            },
            {"GPU-b"},
            R"(annotations { key: "cdi.k8s.io/nvidia-device-plugin_$KEY" value: "k8s.device-plugin.nvidia.com/gpu=GPU-b" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=GPU-b" })"},
        Case{
            "all_four",
            [](auto& o) {
              Strategies(o, {DLS::kEnvvar, DLS::kVolumeMounts,
                             DLS::kCdiAnnotations, DLS::kCdiCri});
            },
            {"GPU-b", "GPU-a"},
            R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "/var/run/nvidia-container-devices" }
                mounts { container_path: "/var/run/nvidia-container-devices/GPU-b" host_path: "/dev/null" }
                mounts { container_path: "/var/run/nvidia-container-devices/GPU-a" host_path: "/dev/null" }
                annotations { key: "cdi.k8s.io/nvidia-device-plugin_$KEY"
                              value: "k8s.device-plugin.nvidia.com/gpu=GPU-b,k8s.device-plugin.nvidia.com/gpu=GPU-a" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=GPU-b" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=GPU-a" })"},
        Case{
            "cdi_only_skips_specs_and_feature_envs",
            [](auto& o) {
              Strategies(o, {DLS::kCdiCri});
              o.pass_device_specs = true;
              o.control_nodes = {"/dev/nvidiactl"};
              o.gds_enabled = o.mofed_enabled = o.gdrcopy_enabled = true;
            },
            {"GPU-a"},
            R"(cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=GPU-a" })"},
        Case{"envvar_with_cdi_keeps_specs_and_feature_envs",
             [](auto& o) {
               Strategies(o, {DLS::kCdiCri, DLS::kEnvvar});
               o.pass_device_specs = true;
               o.gds_enabled = true;
             },
             {"GPU-a"},
             R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-a" }
                envs { key: "NVIDIA_GDS" value: "enabled" }
                devices { container_path: "/dev/nvidia0" host_path: "/dev/nvidia0" permissions: "rw" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=GPU-a" })"}),
    [](const auto& test_info) { return test_info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    DeviceSpecs, AllocateResponseTable,
    ::testing::Values(
        Case{
            "control_then_device_nodes_dedup_under_dev_root",
            [](auto& o) {
              o.pass_device_specs = true;
              o.dev_root = "/run/nvidia/driver";
              o.control_nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
            },
            {"GPU-r::0", "GPU-r::1", "MIG-m1", "MIG-m2"},
            std::string(
                R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-r,MIG-m1,MIG-m2" })") +
                kCtl +
                R"(devices { container_path: "/dev/nvidia5" host_path: "/run/nvidia/driver/dev/nvidia5" permissions: "rw" }
                devices { container_path: "/dev/nvidia7" host_path: "/run/nvidia/driver/dev/nvidia7" permissions: "rw" }
                devices { container_path: "/dev/nvidia-caps/nvidia-cap12" host_path: "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap12" permissions: "rw" }
                devices { container_path: "/dev/nvidia-caps/nvidia-cap13" host_path: "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap13" permissions: "rw" }
                devices { container_path: "/dev/nvidia-caps/nvidia-cap21" host_path: "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap21" permissions: "rw" }
                devices { container_path: "/dev/nvidia-caps/nvidia-cap22" host_path: "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap22" permissions: "rw" })"},
        Case{"no_control_nodes_present_root_dev_root",
             [](auto& o) { o.pass_device_specs = true; },
             {"GPU-b", "GPU-a"},
             R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-b,GPU-a" }
                devices { container_path: "/dev/nvidia3" host_path: "/dev/nvidia3" permissions: "rw" }
                devices { container_path: "/dev/nvidia0" host_path: "/dev/nvidia0" permissions: "rw" })"},
        Case{"probe_overrides_start_up_list",
             [](auto& o) {
               o.pass_device_specs = true;
               o.dev_root = "/host/";
               o.control_nodes = {"/dev/nvidiactl"};
               o.control_nodes_probe = [] {
                 return std::vector<std::string>{"/dev/nvidia-uvm-tools",
                                                 "/dev/nvidia-modeset"};
               };
             },
             {"GPU-a"},
             R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-a" }
                devices { container_path: "/dev/nvidia-uvm-tools" host_path: "/host/dev/nvidia-uvm-tools" permissions: "rw" }
                devices { container_path: "/dev/nvidia-modeset" host_path: "/host/dev/nvidia-modeset" permissions: "rw" }
                devices { container_path: "/dev/nvidia0" host_path: "/host/dev/nvidia0" permissions: "rw" })"},
        Case{
            "volume_mounts_with_specs",
            [](auto& o) {
              Strategies(o, {DLS::kVolumeMounts});
              o.pass_device_specs = true;
            },
            {"MIG-m1"},
            R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "/var/run/nvidia-container-devices" }
                mounts { container_path: "/var/run/nvidia-container-devices/MIG-m1" host_path: "/dev/null" }
                devices { container_path: "/dev/nvidia7" host_path: "/dev/nvidia7" permissions: "rw" }
                devices { container_path: "/dev/nvidia-caps/nvidia-cap12" host_path: "/dev/nvidia-caps/nvidia-cap12" permissions: "rw" }
                devices { container_path: "/dev/nvidia-caps/nvidia-cap13" host_path: "/dev/nvidia-caps/nvidia-cap13" permissions: "rw" })"}),
    [](const auto& test_info) { return test_info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    Features, AllocateResponseTable,
    ::testing::Values(
        Case{"gdrcopy_gds_mofed_envs",
             [](auto& o) {
               o.gdrcopy_enabled = o.gds_enabled = o.mofed_enabled = true;
             },
             {"GPU-a"},
             R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-a" }
                envs { key: "NVIDIA_GDRCOPY" value: "enabled" }
                envs { key: "NVIDIA_GDS" value: "enabled" }
                envs { key: "NVIDIA_MOFED" value: "enabled" })"},
        Case{
            "imex_everywhere",
            [](auto& o) {
              Strategies(o, {DLS::kEnvvar, DLS::kVolumeMounts,
                             DLS::kCdiAnnotations, DLS::kCdiCri});
              o.pass_device_specs = true;
              o.imex_channel_ids = {0, 3};
              o.cdi_additional_devices =
                  AdditionalCdiDevices(kPluginCdiVendor, true, false, true);
            },
            {"GPU-a"},
            R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "/var/run/nvidia-container-devices" }
                envs { key: "NVIDIA_IMEX_CHANNELS" value: "0,3" }
                mounts { container_path: "/var/run/nvidia-container-devices/GPU-a" host_path: "/dev/null" }
                mounts { container_path: "/var/run/nvidia-container-devices/imex/0" host_path: "/dev/null" }
                mounts { container_path: "/var/run/nvidia-container-devices/imex/3" host_path: "/dev/null" }
                devices { container_path: "/dev/nvidia0" host_path: "/dev/nvidia0" permissions: "rw" }
                devices { container_path: "/dev/nvidia-caps-imex-channels/channel0" host_path: "/dev/nvidia-caps-imex-channels/channel0" permissions: "rw" }
                devices { container_path: "/dev/nvidia-caps-imex-channels/channel3" host_path: "/dev/nvidia-caps-imex-channels/channel3" permissions: "rw" }
                annotations { key: "cdi.k8s.io/nvidia-device-plugin_$KEY"
                  value: "k8s.device-plugin.nvidia.com/gpu=GPU-a,k8s.device-plugin.nvidia.com/imex-channel=0,k8s.device-plugin.nvidia.com/imex-channel=3,k8s.device-plugin.nvidia.com/gdrcopy=all,k8s.device-plugin.nvidia.com/mofed=all" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=GPU-a" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/imex-channel=0" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/imex-channel=3" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/gdrcopy=all" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/mofed=all" })"},
        Case{"custom_prefix_vendor_class",
             [](auto& o) {
               Strategies(o, {DLS::kCdiAnnotations});
               o.cdi_annotation_prefix = "custom.cdi.k8s.io/";
               o.cdi_vendor = "example.com";
               o.cdi_class = "accel";
               o.resource_name = "nvidia.com/mig-1g.5gb";
             },
             {"MIG-m1"},
             R"(annotations { key: "custom.cdi.k8s.io/nvidia-device-plugin_$KEY"
                              value: "example.com/accel=MIG-m1" })"},
        Case{
            "mps_envvar_and_volume_mounts",
            [](auto& o) {
              Strategies(o, {DLS::kEnvvar, DLS::kVolumeMounts});
              o.mps_root = "/run/nvidia/mps";
              o.resource_name = "nvidia.com/gpu.shared";
            },
            {"GPU-r::1"},
            R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "/var/run/nvidia-container-devices" }
                envs { key: "CUDA_MPS_PIPE_DIRECTORY" value: "/mps/nvidia.com/gpu.shared/pipe" }
                mounts { container_path: "/mps/nvidia.com/gpu.shared/pipe" host_path: "/run/nvidia/mps/GPU-r/pipe" }
                mounts { container_path: "/dev/shm" host_path: "/run/nvidia/mps/GPU-r/shm" }
                mounts { container_path: "/var/run/nvidia-container-devices/GPU-r" host_path: "/dev/null" })"},
        Case{
            "mps_with_cdi_only",
            [](auto& o) {
              Strategies(o, {DLS::kCdiCri});
              o.mps_root = "/run/nvidia/mps";
            },
            {"GPU-r::0"},
            R"(envs { key: "CUDA_MPS_PIPE_DIRECTORY" value: "/mps/nvidia.com/gpu/pipe" }
                mounts { container_path: "/mps/nvidia.com/gpu/pipe" host_path: "/run/nvidia/mps/GPU-r/pipe" }
                mounts { container_path: "/dev/shm" host_path: "/run/nvidia/mps/GPU-r/shm" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=GPU-r" })"},
        // A GPU of the resource sharing.mps does not replicate has no
        // daemon: no MPS in its answer.
        Case{"mps_device_not_replicated",
             [](auto& o) { o.mps_root = "/run/nvidia/mps"; },
             {"GPU-a"},
             R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "GPU-a" })"}),
    [](const auto& test_info) { return test_info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    IndexIds, AllocateResponseTable,
    ::testing::Values(
        Case{"envvar",
             nullptr,
             {"GPU-b", "MIG-m1", "GPU-r::0", "GPU-r::1"},
             R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "1,3:1,2" })",
             true},
        Case{
            "volume_mounts",
            [](auto& o) { Strategies(o, {DLS::kVolumeMounts}); },
            {"MIG-m2", "GPU-a"},
            R"(envs { key: "NVIDIA_VISIBLE_DEVICES" value: "/var/run/nvidia-container-devices" }
                mounts { container_path: "/var/run/nvidia-container-devices/3:2" host_path: "/dev/null" }
                mounts { container_path: "/var/run/nvidia-container-devices/0" host_path: "/dev/null" })",
            true},
        Case{
            "cdi_both",
            [](auto& o) {
              Strategies(o, {DLS::kCdiAnnotations, DLS::kCdiCri});
            },
            {"GPU-r::1", "MIG-m1"},
            R"(annotations { key: "cdi.k8s.io/nvidia-device-plugin_$KEY" value: "k8s.device-plugin.nvidia.com/gpu=2,k8s.device-plugin.nvidia.com/gpu=3:1" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=2" }
                cdi_devices { name: "k8s.device-plugin.nvidia.com/gpu=3:1" })",
            true}),
    [](const auto& test_info) { return test_info.param.name; });

TEST(AllocateResponseErrorTest, SharedRequestGreaterThanOne) {
  AllocateOptions o;
  o.fail_requests_greater_than_one = true;
  const DeviceSnapshot s = Snapshot(false);
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r =
      BuildAllocateResponse(o, s, {"GPU-a", "GPU-r::0"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "invalid request: maximum request size for shared resources is 1; "
            "found 2");
  r = BuildAllocateResponse(o, s, {"GPU-r::0", "GPU-r::1", "GPU-r::0"});
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("found 3"));
  EXPECT_TRUE(BuildAllocateResponse(o, s, {"GPU-r::1"}).ok());
  EXPECT_TRUE(BuildAllocateResponse(o, s, {"GPU-a", "GPU-b"}).ok());
  o.fail_requests_greater_than_one = false;
  EXPECT_TRUE(BuildAllocateResponse(o, s, {"GPU-r::0", "GPU-r::1"}).ok());
}

TEST(AllocateResponseErrorTest, UnknownIdNamesIt) {
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r = BuildAllocateResponse(
      AllocateOptions(), Snapshot(false), {"GPU-a", "GPU-nope"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "invalid request: unknown device: GPU-nope");
}

TEST(AllocateResponseErrorTest, VisibleIdThatIsNoCdiNameIsInternal) {
  DeviceSnapshot s = Snapshot(false);
  s.devices.push_back(MakeDevice("odd", "odd id", -1, {}));
  AllocateOptions o;
  o.strategies = {DLS::kCdiCri};
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r =
      BuildAllocateResponse(o, s, {"odd"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"odd id\""));
  o.strategies = {DLS::kEnvvar};
  EXPECT_TRUE(BuildAllocateResponse(o, s, {"odd"}).ok());
}

TEST(AllocateResponseTest, AnnotationKeyIsStablePerRequestAndResource) {
  AllocateOptions o;
  o.strategies = {DLS::kCdiAnnotations};
  const DeviceSnapshot s = Snapshot(false);
  auto key = [&](std::vector<std::string> ids) {
    return BuildAllocateResponse(o, s, ids)->annotations().begin()->first;
  };
  const std::string ab = key({"GPU-a", "GPU-b"});
  EXPECT_EQ(ab, key({"GPU-b", "GPU-a"}));
  EXPECT_NE(ab, key({"GPU-a"}));
  o.resource_name = "nvidia.com/other";
  EXPECT_NE(ab, key({"GPU-a", "GPU-b"}));
  // The CDI library's limit on the part after the prefix.
  EXPECT_LE(ab.size() - std::string("cdi.k8s.io/").size(), 63u);
}

TEST(ValidateAllocateOptionsTest, NamesTheBadField) {
  auto invalid = [](std::function<void(AllocateOptions&)> f) {
    AllocateOptions o;
    o.strategies = {DLS::kCdiAnnotations};
    f(o);
    absl::Status s = ValidateAllocateOptions(o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    return std::string(s.message());
  };
  EXPECT_THAT(invalid([](auto& o) { o.strategies.clear(); }),
              HasSubstr("deviceListStrategy"));
  EXPECT_THAT(invalid([](auto& o) { o.cdi_vendor = "-nvidia.com"; }),
              HasSubstr("vendor \"-nvidia.com\""));
  EXPECT_THAT(invalid([](auto& o) { o.cdi_class = "gpu/x"; }),
              HasSubstr("class \"gpu/x\""));
  EXPECT_THAT(invalid([](auto& o) {
                o.cdi_annotation_plugin_name = std::string(30, 'p');
              }),
              HasSubstr("longer than 63"));
  EXPECT_THAT(invalid([](auto& o) { o.cdi_additional_devices = {"gds=all"}; }),
              HasSubstr("\"gds=all\""));
  EXPECT_THAT(invalid([](auto& o) {
                o.mps_root = "/mps";
                o.resource_name.clear();
              }),
              HasSubstr("MPS"));

  EXPECT_THAT(invalid([](auto& o) {
                o.imex_channel_ids = {0, -1};
              }),
              HasSubstr("imex.channelIDs: -1"));

  AllocateOptions plain;
  plain.cdi_vendor = "not a vendor";  // unused without a CDI strategy
  EXPECT_TRUE(ValidateAllocateOptions(plain).ok());
}

TEST(MakeAllocateHandlerTest, ValidatesThenBuilds) {
  AllocateOptions bad;
  bad.strategies.clear();
  EXPECT_FALSE(MakeAllocateHandler(bad).ok());

  AllocateOptions o;
  o.strategies = {DLS::kCdiCri};
  absl::StatusOr<AllocateHandler> handler = MakeAllocateHandler(o);
  ASSERT_TRUE(handler.ok()) << handler.status();
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r =
      (*handler)(Snapshot(false), {"GPU-b"});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->cdi_devices_size(), 1);
  EXPECT_EQ(r->cdi_devices(0).name(), "k8s.device-plugin.nvidia.com/gpu=GPU-b");
}

TEST(EnvvarResponseTest, DefaultOptions) {
  DeviceSnapshot s = Snapshot(false);
  s.devices.push_back(MakeDevice("3", "", -1, {}));
  absl::StatusOr<v1beta1::ContainerAllocateResponse> r =
      EnvvarResponse(s, {"3", "GPU-r::0", "GPU-r::1"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs_size(), 1);
  // A device without a visible ID is named by its own ID.
  EXPECT_EQ(r->envs().at(kVisibleDevicesEnv), "3,GPU-r");
  EXPECT_EQ(r->mounts_size() + r->devices_size() + r->annotations_size() +
                r->cdi_devices_size(),
            0);
}

}  // namespace
}  // namespace gpulet::allocation
