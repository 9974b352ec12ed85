#include "src/model/cdi/spec_builder.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/model/cdi/validate.h"
#include "src/model/testing/test_hooks.h"

namespace gpulet::cdi {
namespace {

using ::testing::ElementsAre;
using testing::ExpectEveryHookConfined;
using ::testing::HasSubstr;

device::Node TwoGpus() {
  device::Node node;
  node.driver_version = "550.54.15";
  device::Gpu gpu0;
  gpu0.index = 0;
  gpu0.uuid = "GPU-aaaa";
  gpu0.minor = 2;  // minors need not equal indexes
  device::Gpu gpu1;
  gpu1.index = 1;
  gpu1.uuid = "GPU-bbbb";
  gpu1.minor = 0;
  gpu1.mig_enabled = true;
  device::MigDevice a{.uuid = "MIG-a",
                      .parent_index = 1,
                      .mig_index = 0,
                      .gpu_instance_id = 1,
                      .compute_instance_id = 0};
  device::MigDevice b{.uuid = "MIG-b",
                      .parent_index = 1,
                      .mig_index = 1,
                      .gpu_instance_id = 5,
                      .compute_instance_id = 0};
  gpu1.mig_devices = {a, b};
  node.gpus = {gpu0, gpu1};
  return node;
}

Driver FakeDriver() {
  Driver driver;
  driver.root = "/run/nvidia/driver";
  driver.dev_root = "/";
  driver.version = "550.54.15";
  driver.device_nodes = {
      {"/dev/nvidia-uvm", "/dev/nvidia-uvm", "c", 511, 0, 0666},
      {"/dev/nvidia2", "/dev/nvidia2", "c", 195, 2, 0666},
      {"/dev/nvidiactl", "/dev/nvidiactl", "c", 195, 255, 0666},
  };
  driver.libraries = {
      {"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
       "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
       "compute"},
      {"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
       "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
       "utility"},
      {"/usr/lib64/libnvcuvid.so.550.54.15",
       "/run/nvidia/driver/usr/lib64/libnvcuvid.so.550.54.15", "video"},
  };
  driver.binaries = {{"/usr/bin/nvidia-smi",
                      "/run/nvidia/driver/usr/bin/nvidia-smi", "utility"}};
  driver.mig_minors = MigMinors::Parse(
                          "gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"
                          "gpu0/gi5/access 48\ngpu0/gi5/ci0/access 49\n")
                          .value();
  driver.char_majors = {{"nvidia-caps", 235}};
  return driver;
}

const Device* Find(const Spec& spec, const std::string& name) {
  for (const Device& d : spec.devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::vector<std::string> NodePaths(const ContainerEdits& edits) {
  std::vector<std::string> paths;
  for (const DeviceNode& n : edits.device_nodes) paths.push_back(n.path);
  return paths;
}

TEST(BuildSpecTest, NamesEveryGpuAndMigDeviceByIndexAndUuid) {
  absl::StatusOr<Spec> spec = BuildSpec(TwoGpus(), FakeDriver());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, "nvidia.com/gpu");
  EXPECT_EQ(spec->cdi_version, "0.5.0");  // digit-leading names
  std::vector<std::string> names;
  for (const Device& d : spec->devices) names.push_back(d.name);
  EXPECT_THAT(names, ElementsAre("0", "GPU-aaaa", "1", "GPU-bbbb", "1:0",
                                 "MIG-a", "1:1", "MIG-b", "all"));
  EXPECT_TRUE(Validate(*spec).ok());
}

TEST(BuildSpecTest, GivesEachDeviceItsNodes) {
  Spec spec = BuildSpec(TwoGpus(), FakeDriver()).value();
  // Present on the host: taken from the stat.
  EXPECT_EQ(
      Find(spec, "0")->edits.device_nodes,
      (std::vector<DeviceNode>{
          {.path = "/dev/nvidia2", .type = "c", .major = 195, .minor = 2}}));
  EXPECT_EQ(Find(spec, "GPU-aaaa")->edits, Find(spec, "0")->edits);
  // Absent: NVIDIA's fixed major and the NVML minor.
  EXPECT_EQ(
      Find(spec, "1")->edits.device_nodes,
      (std::vector<DeviceNode>{
          {.path = "/dev/nvidia0", .type = "c", .major = 195, .minor = 0}}));
  // MIG: parent node plus the GI and CI caps of GPU minor 0.
  const Device* mig = Find(spec, "1:1");
  EXPECT_EQ(mig->edits, Find(spec, "MIG-b")->edits);
  EXPECT_THAT(NodePaths(mig->edits),
              ElementsAre("/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap48",
                          "/dev/nvidia-caps/nvidia-cap49"));
  EXPECT_EQ(mig->edits.device_nodes[1].major, 235);
  EXPECT_EQ(mig->edits.device_nodes[1].minor, 48);
  EXPECT_THAT(NodePaths(Find(spec, "all")->edits),
              ElementsAre("/dev/nvidia2", "/dev/nvidia0",
                          "/dev/nvidia-caps/nvidia-cap12",
                          "/dev/nvidia-caps/nvidia-cap13",
                          "/dev/nvidia-caps/nvidia-cap48",
                          "/dev/nvidia-caps/nvidia-cap49"));
}

TEST(BuildSpecTest, SharedEditsMountTheDriverAndRefreshTheLdCache) {
  Spec spec = BuildSpec(TwoGpus(), FakeDriver()).value();
  EXPECT_EQ(spec.edits.env,
            std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void"});
  EXPECT_THAT(NodePaths(spec.edits),
              ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm"));
  ASSERT_EQ(spec.edits.mounts.size(), 4u);
  EXPECT_EQ(spec.edits.mounts[0],
            (Mount{"/run/nvidia/driver/usr/lib/x86_64-linux-gnu/"
                   "libcuda.so.550.54.15",
                   "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                   "",
                   {"ro", "nosuid", "nodev", "rbind", "rprivate"}}));
  EXPECT_EQ(spec.edits.mounts[3].container_path, "/usr/bin/nvidia-smi");
  ASSERT_EQ(spec.edits.hooks.size(), 1u);
  EXPECT_EQ(spec.edits.hooks[0],
            (Hook{"createContainer",
                  "/usr/bin/gpulet-runtime",
                  {"gpulet-runtime", "hook", "update-ldcache", "--folder",
                   "/usr/lib/x86_64-linux-gnu", "--folder", "/usr/lib64"},
                  {kHookEnv},
                  kHookTimeoutSeconds}));
}

// A hook without `env` would run with the container's environment
// (docs/runtime.md, "Threat model"): every hook gets one, whatever the
// options.
TEST(BuildSpecTest, EveryHookHasAnExplicitEnvAndTimeout) {
  BuildOptions options;
  options.hook_path = "/opt/gpulet-runtime";
  options.capabilities = {"compute"};
  for (const BuildOptions& o : {BuildOptions{}, options}) {
    Spec spec = BuildSpec(TwoGpus(), FakeDriver(), o).value();
    ASSERT_FALSE(spec.edits.hooks.empty());
    ExpectEveryHookConfined(spec);
  }
}

TEST(SetHookDefaultsTest, KeepsWhatIsSetAndFillsWhatIsNot) {
  Spec spec;
  spec.edits.hooks = {Hook{"createContainer", "/a", {}, {}, std::nullopt},
                      Hook{"createContainer", "/b", {}, {"X=1"}, 5}};
  spec.devices.emplace_back();
  spec.devices[0].edits.hooks = {
      Hook{"startContainer", "/c", {}, {}, std::nullopt}};
  SetHookDefaults(spec);
  EXPECT_EQ(spec.edits.hooks[0].env, std::vector<std::string>{kHookEnv});
  EXPECT_EQ(spec.edits.hooks[0].timeout, kHookTimeoutSeconds);
  EXPECT_EQ(spec.edits.hooks[1].env, std::vector<std::string>{"X=1"});
  EXPECT_EQ(spec.edits.hooks[1].timeout, 5);
  ExpectEveryHookConfined(spec);
}

TEST(BuildSpecTest, OptionsFilterAndRename) {
  BuildOptions options;
  options.vendor = "example.com";
  options.cls = "accel";
  options.hook_path = "/opt/gpulet/bin/gpulet-runtime";
  options.capabilities = {"utility"};
  options.mount_binaries = false;
  Spec spec = BuildSpec(TwoGpus(), FakeDriver(), options).value();
  EXPECT_EQ(spec.kind, "example.com/accel");
  ASSERT_EQ(spec.edits.mounts.size(), 1u);
  EXPECT_EQ(spec.edits.mounts[0].container_path,
            "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15");
  EXPECT_EQ(spec.edits.hooks[0].path, "/opt/gpulet/bin/gpulet-runtime");
}

TEST(BuildSpecTest, NoLibrariesMeansNoHook) {
  Driver driver = FakeDriver();
  driver.libraries.clear();
  Spec spec = BuildSpec(TwoGpus(), driver).value();
  EXPECT_TRUE(spec.edits.hooks.empty());
}

TEST(BuildSpecTest, DevRootBecomesHostPath) {
  Driver driver = FakeDriver();
  driver.device_nodes.clear();
  driver.dev_root = "/run/nvidia/driver";
  Spec spec = BuildSpec(TwoGpus(), driver).value();
  EXPECT_EQ(Find(spec, "0")->edits.device_nodes[0].host_path,
            "/run/nvidia/driver/dev/nvidia2");
}

TEST(BuildSpecTest, UnknownMigCapsFailOrAreLeftOut) {
  Driver driver = FakeDriver();
  driver.mig_minors = MigMinors::Parse("gpu0/gi1/access 12\n").value();
  absl::StatusOr<Spec> spec = BuildSpec(TwoGpus(), driver);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("MIG device MIG-a (GPU 1 GI 1 CI 0)"));
  BuildOptions lenient;
  lenient.require_mig_caps = false;
  spec = BuildSpec(TwoGpus(), driver, lenient);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(Find(*spec, "1:0"), nullptr);
  EXPECT_NE(Find(*spec, "1"), nullptr);
}

TEST(BuildSpecTest, RejectsNodesWithoutGpusAndBadNames) {
  EXPECT_EQ(BuildSpec(device::Node{}, FakeDriver()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  BuildOptions options;
  options.vendor = "-bad";
  EXPECT_EQ(BuildSpec(TwoGpus(), FakeDriver(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpulet::cdi
