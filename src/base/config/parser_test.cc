// NVIDIA-shaped config files, loaded unchanged from testdata/, against the
// Config values they must produce.
#include "src/base/config/parser.h"

#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/config/names.h"
#include "src/base/config/validate.h"

namespace gpulet::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = ReplicaDevices::Kind;

std::string TestData(const std::string& name) {
  return std::string(GPULET_SOURCE_DIR) + "/src/base/config/testdata/" + name;
}

ReplicatedResource Replicated(std::string name, int replicas,
                              std::string rename = "",
                              ReplicaDevices devices = {}) {
  return ReplicatedResource{std::move(name), std::move(rename),
                            std::move(devices), replicas};
}

struct FileCase {
  std::string file;
  // Applied to a default Config to give the expected one.
  std::function<void(Config&)> expect;
};

class ParserFileTest : public ::testing::TestWithParam<FileCase> {};

TEST_P(ParserFileTest, LoadsUnchangedNvidiaFile) {
  absl::StatusOr<Config> got = LoadConfigFile(TestData(GetParam().file));
  ASSERT_TRUE(got.ok()) << got.status();
  Config want;
  GetParam().expect(want);
  EXPECT_EQ(got->version, want.version);
  EXPECT_EQ(got->flags, want.flags);
  EXPECT_EQ(got->resources, want.resources);
  EXPECT_EQ(got->sharing, want.sharing);
  EXPECT_EQ(got->imex, want.imex);
  EXPECT_EQ(got->ignored_keys, want.ignored_keys);
  EXPECT_TRUE(Validate(*got).ok()) << Validate(*got);
}

const FileCase kFileCases[] = {
    {"version-only.yaml", [](Config&) {}},
    {"plain-flags.yaml",
     [](Config& c) { c.flags.nvidia_driver_root = "/run/nvidia/driver"; }},
    {"no-version.yaml",
     [](Config& c) { c.flags.mig_strategy = MigStrategy::kSingle; }},
    {"all-flags.yaml",
     [](Config& c) {
       Flags& f = c.flags;
       f.mig_strategy = MigStrategy::kSingle;
       f.fail_on_init_error = false;
       f.mps_root = "/run/nvidia/mps";
       f.nvidia_driver_root = "/run/nvidia/driver";
       f.nvidia_dev_root = "/";
       f.gdrcopy_enabled = f.gds_enabled = f.mofed_enabled = true;
       f.device_discovery_strategy = DeviceDiscoveryStrategy::kNvml;
       PluginFlags& p = f.plugin;
       p.pass_device_specs = true;
       p.device_list_strategy = {DeviceListStrategy::kVolumeMounts,
                                 DeviceListStrategy::kEnvvar};
       p.device_id_strategy = DeviceIdStrategy::kIndex;
       p.cdi_annotation_prefix = "nvidia.cdi.k8s.io/";
       p.nvidia_ctk_path = "/usr/local/nvidia/toolkit/nvidia-ctk";
       p.container_driver_root = "/host-driver";
       p.shared_devices_allocation_policy =
           SharedDevicesAllocationPolicy::kPacked;
       p.cdi_feature_flags = {"disable-multiple-csv-devices"};
       c.imex = Imex{{0}, true};
     }},
    {"time-slicing.yaml",
     [](Config& c) {
       c.sharing.time_slicing = ReplicatedResources{
           true,
           true,
           {Replicated("nvidia.com/gpu", 10, "nvidia.com/gpu.shared")}};
     }},
    {"mps.yaml",
     [](Config& c) {
       c.flags.mps_root = "/run/nvidia/mps";
       // failRequestsGreaterThanOne defaults to true for MPS.
       c.sharing.mps =
           ReplicatedResources{false, true, {Replicated("nvidia.com/gpu", 4)}};
     }},
    {"mig-mixed.yaml",
     [](Config& c) {
       c.flags.mig_strategy = MigStrategy::kMixed;
       c.sharing.time_slicing =
           ReplicatedResources{false,
                               false,
                               {Replicated("nvidia.com/gpu", 2),
                                Replicated("nvidia.com/mig-1g.5gb", 2),
                                Replicated("nvidia.com/mig-2g.10gb", 2),
                                Replicated("nvidia.com/mig-3g.20gb", 3),
                                Replicated("nvidia.com/mig-7g.40gb", 7)}};
     }},
    {"cdi-list.yaml",
     [](Config& c) {
       c.flags.plugin.device_list_strategy = {
           DeviceListStrategy::kCdiAnnotations, DeviceListStrategy::kCdiCri};
     }},
    {"cdi-string.yaml",
     [](Config& c) {
       c.flags.plugin.device_list_strategy = {DeviceListStrategy::kCdiCri};
     }},
    {"devices.yaml",
     [](Config& c) {
       c.sharing.time_slicing = ReplicatedResources{
           false,
           false,
           {Replicated("nvidia.com/gpu", 2, "", {Kind::kAll, 0, {}}),
            Replicated("nvidia.com/mig-1g.5gb", 3, "", {Kind::kCount, 2, {}}),
            Replicated(
                "nvidia.com/mig-2g.10gb", 4, "",
                {Kind::kList,
                 0,
                 {"0", "1", "0:1", "GPU-b1028956-cfa2-0990-bf4a-5da9abb51763",
                  "MIG-GPU-b1028956-cfa2-0990-bf4a-5da9abb51763/3/0",
                  "MIG-d8f3b9b0-24a2-5c1f-8b33-1b0c1bd9f5e1"}})}};
     }},
    {"rename.yaml",
     [](Config& c) {
       c.flags.mig_strategy = MigStrategy::kMixed;
       c.resources.gpus = {{"*A100*", "nvidia.com/a100"},
                           {"Tesla T4", "nvidia.com/t4"}};
       c.resources.mig = {{"1g.5gb", "nvidia.com/mig-small"}};
       c.sharing.time_slicing = ReplicatedResources{
           false,
           false,
           {Replicated("nvidia.com/a100", 4, "nvidia.com/a100-shared"),
            Replicated("nvidia.com/t4", 2)}};
     }},
    {"gfd-shared.yaml",
     [](Config& c) {
       c.flags.mig_strategy = MigStrategy::kSingle;
       c.flags.plugin.pass_device_specs = true;
       c.ignored_keys = {
           "flags.useNodeFeatureAPI", "flags.gfd.oneshot",
           "flags.gfd.noTimestamp",   "flags.gfd.sleepInterval",
           "flags.gfd.outputFile",    "flags.gfd.machineTypeFile"};
     }},
    {"json-form.yaml",
     [](Config& c) {
       c.flags.plugin.device_list_strategy = {
           DeviceListStrategy::kEnvvar, DeviceListStrategy::kCdiAnnotations};
       c.flags.plugin.device_id_strategy = DeviceIdStrategy::kIndex;
       c.sharing.time_slicing =
           ReplicatedResources{false, false, {Replicated("nvidia.com/gpu", 3)}};
     }},
};

INSTANTIATE_TEST_SUITE_P(
    Testdata, ParserFileTest, ::testing::ValuesIn(kFileCases),
    [](const ::testing::TestParamInfo<FileCase>& param_info) {
      std::string name =
          param_info.param.file.substr(0, param_info.param.file.find('.'));
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

TEST(ParserTest, RecordsWhereEachValueCameFrom) {
  absl::StatusOr<Config> c = LoadConfigFile(TestData("time-slicing.yaml"));
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string file = TestData("time-slicing.yaml");
  EXPECT_EQ(c->origins.at("flags.migStrategy"), (Origin{file, 3, 16}));
  EXPECT_EQ(c->origins.at("sharing.timeSlicing.resources[0].replicas"),
            (Origin{file, 10, 17}));
  // The derived rename points at the name it came from.
  EXPECT_EQ(c->origins.at("sharing.timeSlicing.resources[0].rename"),
            (Origin{file, 9, 13}));
}

TEST(ParserTest, HealthAndMetricsSections) {
  absl::StatusOr<Config> c = ParseConfig(
      "health:\n"
      "  disabled: false\n"
      "  quietPeriod: 1h30m\n"
      "  ignoredXids: [999, 1000]\n"
      "  xids:\n"
      "  - {codes: [48, 63], action: unhealthy}\n"
      "  - codes: [31]\n"
      "    action: reset\n"
      "  - {codes: [13], action: ignore}\n"
      "metrics:\n"
      "  address: \":9400\"\n",
      "h.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  Health want;
  want.quiet_period = absl::Minutes(90);
  want.ignored_xids = {999, 1000};
  want.xids = {{{48, 63}, XidAction::kUnhealthy},
               {{31}, XidAction::kReset},
               {{13}, XidAction::kIgnore}};
  EXPECT_EQ(c->health, want);
  EXPECT_EQ(c->metrics.address, ":9400");
  EXPECT_EQ(c->origins.at("health.xids[1].codes[0]").ToString(), "h.yaml:7:13");
  EXPECT_EQ(c->origins.at("metrics.address").ToString(), "h.yaml:11:12");
  absl::StatusOr<Config> none = ParseConfig("version: v1\n", "h.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->health, Health{});
  EXPECT_EQ(none->metrics.address, "");
}

TEST(ParserTest, DraSection) {
  absl::StatusOr<Config> c = ParseConfig(
      "dra:\n"
      "  unhealthyDevices: taint\n"
      "  taints: {unhealthy: None, lost: NoSchedule}\n",
      "d.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->dra, (Dra{.unhealthy_devices = UnhealthyDevices::kTaint,
                         .unhealthy_effect = TaintEffect::kNone,
                         .lost_effect = TaintEffect::kNoSchedule}));
  EXPECT_EQ(c->origins.at("dra.taints.lost").ToString(), "d.yaml:3:35");
  absl::StatusOr<Config> none = ParseConfig("version: v1\n", "d.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->dra, Dra{});
  EXPECT_EQ(none->dra.unhealthy_devices, UnhealthyDevices::kDrop);
  EXPECT_EQ(none->dra.lost_effect, TaintEffect::kNoExecute);
  // Effects are spelled as the API spells them.
  absl::StatusOr<Config> bad =
      ParseConfig("dra:\n  taints:\n    lost: noexecute\n", "d.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("dra.taints.lost"));
  bad = ParseConfig("dra: {unhealthyDevices: hide}\n", "d.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("dra.unhealthyDevices"));
}

TEST(ParserTest, MemorySharesSection) {
  absl::StatusOr<Config> c = ParseConfig(
      "sharing:\n"
      "  memory:\n"
      "    resourceName: aliyun.com/gpu-mem\n"
      "    unit: 512MiB\n"
      "    devices: [0, GPU-b1028956-cfa2-0990-bf4a-5da9abb51763]\n"
      "    maxDevicesPerNode: 2048\n"
      "    pendingTimeout: 90s\n"
      "    resyncPeriod: 10m\n"
      "    policy: spread\n"
      "    mps: {enabled: true, computeByShare: true}\n",
      "m.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->sharing.memory.has_value());
  const MemoryShares& m = *c->sharing.memory;
  EXPECT_EQ(m.resource_name, "aliyun.com/gpu-mem");
  EXPECT_EQ(m.unit_mib, 512);
  EXPECT_EQ(m.devices.kind, ReplicaDevices::Kind::kList);
  EXPECT_EQ(m.devices.list.size(), 2u);
  EXPECT_EQ(m.max_devices_per_node, 2048);
  EXPECT_EQ(m.pending_timeout, absl::Seconds(90));
  EXPECT_EQ(m.resync_period, absl::Minutes(10));
  EXPECT_EQ(m.policy, MemoryPolicy::kSpread);
  EXPECT_TRUE(m.mps);
  EXPECT_TRUE(m.mps_compute_by_share);
  EXPECT_EQ(c->origins.at("sharing.memory.unit").ToString(), "m.yaml:4:11");
  EXPECT_EQ(c->sharing.Strategy(), SharingStrategy::kNone);

  absl::StatusOr<Config> defaults =
      ParseConfig("sharing:\n  memory: {resourceName: gpu-mem}\n", "m.yaml");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  MemoryShares want;
  want.resource_name = "nvidia.com/gpu-memory";
  EXPECT_EQ(defaults->sharing.memory->resource_name, "nvidia.com/gpu-mem");
  EXPECT_EQ(defaults->sharing.memory->unit_mib, 1024);
  EXPECT_EQ(defaults->sharing.memory->devices.kind, ReplicaDevices::Kind::kAll);
  EXPECT_EQ(defaults->sharing.memory->pending_timeout, absl::Minutes(5));
  EXPECT_FALSE(defaults->sharing.memory->mps);
  EXPECT_EQ(MemoryShares{}, want);
}

TEST(ParserTest, MemoryUnits) {
  EXPECT_EQ(*ParseMemoryUnit("MiB"), 1);
  EXPECT_EQ(*ParseMemoryUnit("GiB"), 1024);
  EXPECT_EQ(*ParseMemoryUnit("512MiB"), 512);
  EXPECT_EQ(*ParseMemoryUnit("2GiB"), 2048);
  EXPECT_EQ(*ParseMemoryUnit("1024GiB"), 1 << 20);
  for (const char* bad : {"", "KiB", "0MiB", "1025GiB", "-1GiB", "1.5GiB",
                          "gib", "2 GiB", "99999999999MiB"}) {
    EXPECT_FALSE(ParseMemoryUnit(bad).ok()) << bad;
  }
  EXPECT_EQ(MemoryUnitName(1), "MiB");
  EXPECT_EQ(MemoryUnitName(1024), "GiB");
  EXPECT_EQ(MemoryUnitName(2048), "2GiB");
  EXPECT_EQ(MemoryUnitName(512), "512MiB");
}

TEST(ParserTest, EmptyTextIsAllDefaults) {
  absl::StatusOr<Config> c = ParseConfig("", "empty.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags, Flags{});
  EXPECT_FALSE(c->sharing.time_slicing.has_value());
}

TEST(ParserTest, KeysMatchIgnoringCaseAsNvidiaDoes) {
  absl::StatusOr<Config> c =
      ParseConfig("flags:\n  plugin:\n    deviceIdStrategy: index\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags.plugin.device_id_strategy, DeviceIdStrategy::kIndex);
  EXPECT_TRUE(c->origins.contains("flags.plugin.deviceIDStrategy"));
}

TEST(ParserTest, NullValuesAreUnset) {
  absl::StatusOr<Config> c =
      ParseConfig("flags:\n  migStrategy:\n  plugin: ~\nsharing:\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags, Flags{});
  EXPECT_EQ(c->sharing, Sharing{});
}

TEST(ParserTest, DuplicateStrategiesCollapse) {
  absl::StatusOr<Config> c = ParseConfig(
      "flags: {plugin: {deviceListStrategy: [envvar, cdi-cri, envvar]}}",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(
      c->flags.plugin.device_list_strategy,
      ElementsAre(DeviceListStrategy::kEnvvar, DeviceListStrategy::kCdiCri));
}

TEST(ParserTest, MpsMayTurnOffFailRequestsGreaterThanOne) {
  absl::StatusOr<Config> c = ParseConfig(
      "sharing:\n  mps:\n    failRequestsGreaterThanOne: false\n"
      "    resources: [{name: gpu, replicas: 2}]\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->sharing.mps->fail_requests_greater_than_one);
}

TEST(ParserTest, MissingFileNamesThePath) {
  absl::StatusOr<Config> c = LoadConfigFile("/nonexistent/gpulet.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/gpulet.yaml"));
}

TEST(ParserTest, AnchorsAndAliasesWork) {
  absl::StatusOr<Config> c = ParseConfig(
      "sharing:\n  timeSlicing:\n    resources:\n"
      "    - &r {name: gpu, replicas: 2}\n"
      "  mps: {resources: [*r]}\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sharing.mps->resources[0].name, "nvidia.com/gpu");
}

}  // namespace
}  // namespace gpulet::config
