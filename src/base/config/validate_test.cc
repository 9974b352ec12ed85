// Bad configurations and the exact error each must produce: the position,
// the key path and what is wrong.
#include "src/base/config/validate.h"

#include <string>

#include "gtest/gtest.h"
#include "src/base/config/parser.h"

namespace gpulet::config {
namespace {

// ParseConfig, then the cross-field rules, as Resolve would run them.
absl::Status Check(const std::string& yaml) {
  absl::StatusOr<Config> config = ParseConfig(yaml, "t.yaml");
  if (!config.ok()) return config.status();
  return Validate(*config);
}

struct BadCase {
  const char* name;
  std::string yaml;
  std::string error;
};

class BadConfigTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfigTest, ExactError) {
  absl::Status s = Check(GetParam().yaml);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.message()), GetParam().error);
}

// A sharing section whose one resource has the given extra lines.
std::string OneShared(const std::string& lines) {
  return "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n" + lines;
}

const BadCase kBadCases[] = {
    {"Version", "version: v2\n",
     "t.yaml:1:10: version: unknown version \"v2\" (gpulet reads version: v1 "
     "files)"},
    {"MigStrategy", "flags:\n  migStrategy: bogus\n",
     "t.yaml:2:16: flags.migStrategy: unknown value \"bogus\" (expected one "
     "of: none, single, mixed)"},
    {"MigStrategyCase", "flags:\n  migStrategy: Mixed\n",
     "t.yaml:2:16: flags.migStrategy: unknown value \"Mixed\" (expected one "
     "of: none, single, mixed)"},
    {"DeviceIdStrategy", "flags:\n  plugin:\n    deviceIDStrategy: serial\n",
     "t.yaml:3:23: flags.plugin.deviceIDStrategy: unknown value \"serial\" "
     "(expected one of: uuid, index)"},
    {"DeviceListStrategyItem",
     "flags:\n  plugin:\n    deviceListStrategy: [envvar, nfs]\n",
     "t.yaml:3:34: flags.plugin.deviceListStrategy[1]: unknown value \"nfs\" "
     "(expected one of: envvar, volume-mounts, cdi-annotations, cdi-cri)"},
    {"DeviceListStrategyEmpty",
     "flags:\n  plugin:\n    deviceListStrategy: []\n",
     "t.yaml:3:25: flags.plugin.deviceListStrategy: no device list strategy "
     "specified; at least one of envvar, volume-mounts, cdi-annotations, "
     "cdi-cri is required"},
    {"DeviceListStrategyMap",
     "flags:\n  plugin:\n    deviceListStrategy: {a: b}\n",
     "t.yaml:3:25: flags.plugin.deviceListStrategy: expected one of envvar, "
     "volume-mounts, cdi-annotations, cdi-cri, got a map"},
    {"AllocationPolicy",
     "flags:\n  plugin:\n    sharedDevicesAllocationPolicy: random\n",
     "t.yaml:3:36: flags.plugin.sharedDevicesAllocationPolicy: unknown value "
     "\"random\" (expected one of: distributed, packed)"},
    {"DiscoveryTegra", "flags:\n  deviceDiscoveryStrategy: tegra\n",
     "t.yaml:2:28: flags.deviceDiscoveryStrategy: unknown value \"tegra\" "
     "(expected one of: auto, nvml)"},
    {"Bool", "flags:\n  failOnInitError: maybe\n",
     "t.yaml:2:20: flags.failOnInitError: expected true or false, got "
     "\"maybe\""},
    {"UnknownKeyNearMiss", "flags:\n  migStrategyy: none\n",
     "t.yaml:2:3: flags.migStrategyy: unknown key \"migStrategyy\" (did you "
     "mean \"migStrategy\"?)"},
    {"UnknownTopLevelKey", "version: v1\nextras: {}\n",
     "t.yaml:2:1: extras: unknown key \"extras\" (known keys: version, "
     "flags, resources, sharing, imex, health, metrics, passthrough, dra)"},
    {"DuplicateKey", "flags:\n  migStrategy: none\n  migStrategy: mixed\n",
     "t.yaml:3:3: flags.migStrategy: duplicate key"},
    {"TopLevelList", "- version: v1\n",
     "t.yaml:1:1: (top level): expected a map with version, flags, resources, "
     "sharing, imex, health, metrics, passthrough, dra; got a list"},
    {"InvalidYaml", "flags: [none\n",
     "t.yaml:2:1: invalid YAML: end of sequence flow not found"},
    {"ReplicasOne", OneShared("      replicas: 1\n"),
     "t.yaml:5:17: sharing.timeSlicing.resources[0].replicas: must be >= 2, "
     "got 1"},
    {"ReplicasNegative", OneShared("      replicas: -3\n"),
     "t.yaml:5:17: sharing.timeSlicing.resources[0].replicas: must be >= 2, "
     "got -3"},
    {"ReplicasTooMany", OneShared("      replicas: 5000\n"),
     "t.yaml:5:17: sharing.timeSlicing.resources[0].replicas: must be <= "
     "1024, got 5000"},
    {"ReplicasNotNumber", OneShared("      replicas: ten\n"),
     "t.yaml:5:17: sharing.timeSlicing.resources[0].replicas: expected an "
     "integer, got \"ten\""},
    {"ReplicasMissing", OneShared("      devices: all\n"),
     "t.yaml:4:7: sharing.timeSlicing.resources[0].replicas: required key is "
     "missing"},
    {"NameMissing", "sharing:\n  mps:\n    resources:\n    - replicas: 2\n",
     "t.yaml:4:7: sharing.mps.resources[0].name: required key is missing"},
    {"NameSyntax",
     "sharing:\n  timeSlicing:\n    resources:\n    - name: Big_GPU\n"
     "      replicas: 2\n",
     "t.yaml:4:13: sharing.timeSlicing.resources[0].name: \"Big_GPU\" is not "
     "a valid resource name: after \"nvidia.com/\" it needs lowercase "
     "letters, digits, '-' and '.', starting and ending with a letter or "
     "digit"},
    {"NameOtherDomain",
     "resources:\n  gpus:\n  - pattern: '*'\n    name: example.com/gpu\n",
     "t.yaml:4:11: resources.gpus[0].name: \"example.com/gpu\" is not a valid "
     "resource name: after \"nvidia.com/\" it needs lowercase letters, "
     "digits, '-' and '.', starting and ending with a letter or digit"},
    {"NameTooLong",
     "resources:\n  mig:\n  - pattern: 1g.5gb\n    name: "
     "mig-an-extremely-long-resource-name-for-a-small-slice\n",
     "t.yaml:4:11: resources.mig[0].name: resource name "
     "\"nvidia.com/mig-an-extremely-long-resource-name-for-a-small-slice\" "
     "is 64 characters long; at most 63 allowed"},
    {"RenameSyntax", OneShared("      rename: -shared\n      replicas: 2\n"),
     "t.yaml:5:15: sharing.timeSlicing.resources[0].rename: \"-shared\" is not "
     "a valid resource name: after \"nvidia.com/\" it needs lowercase "
     "letters, digits, '-' and '.', starting and ending with a letter or "
     "digit"},
    {"RenameByDefaultTooLong",
     "sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
     "    - name: a-long-resource-name-for-a-test-of-the-limits-xy\n"
     "      replicas: 2\n",
     "t.yaml:5:13: sharing.timeSlicing.resources[0].rename: resource name "
     "\"nvidia.com/a-long-resource-name-for-a-test-of-the-limits-xy.shared\" "
     "is 66 characters long; at most 63 allowed"},
    {"DuplicateName",
     OneShared("      replicas: 2\n    - name: nvidia.com/gpu\n"
               "      replicas: 4\n"),
     "t.yaml:6:13: sharing.timeSlicing.resources[1].name: duplicate resource "
     "nvidia.com/gpu (also at sharing.timeSlicing.resources[0]); entries "
     "sharing one resource must each list their devices"},
    {"DuplicateNameOneListed",
     OneShared(
         "      devices: [0]\n      replicas: 2\n    - name: nvidia.com/gpu\n"
         "      replicas: 4\n"),
     "t.yaml:7:13: sharing.timeSlicing.resources[1].name: duplicate resource "
     "nvidia.com/gpu (also at sharing.timeSlicing.resources[0]); entries "
     "sharing one resource must each list their devices"},
    {"DuplicateAdvertisedName",
     OneShared("      rename: t4\n      replicas: 2\n    - name: t4\n"
               "      replicas: 4\n"),
     "t.yaml:7:13: sharing.timeSlicing.resources[1].name: advertised name "
     "nvidia.com/t4 is also used by sharing.timeSlicing.resources[0]"},
    {"DevicesWord", OneShared("      devices: some\n      replicas: 2\n"),
     "t.yaml:5:16: sharing.timeSlicing.resources[0].devices: expected "
     "\"all\", a count, or a list of GPU indexes, MIG indexes (i:j) and "
     "UUIDs; got \"some\""},
    {"DevicesQuotedCount",
     OneShared("      devices: \"2\"\n      replicas: 2\n"),
     "t.yaml:5:16: sharing.timeSlicing.resources[0].devices: expected "
     "\"all\", a count, or a list of GPU indexes, MIG indexes (i:j) and "
     "UUIDs; got \"2\""},
    {"DevicesZero", OneShared("      devices: 0\n      replicas: 2\n"),
     "t.yaml:5:16: sharing.timeSlicing.resources[0].devices: a device count "
     "must be in [1, 4096], got 0"},
    {"DevicesBadRef",
     OneShared("      devices: [0, \"x:y\"]\n      replicas: 2\n"),
     "t.yaml:5:20: sharing.timeSlicing.resources[0].devices[1]: \"x:y\" is "
     "not a GPU index, a MIG index (i:j), or a GPU-/MIG- UUID"},
    {"DevicesShortUuid",
     OneShared("      devices: [GPU-1234]\n      replicas: 2\n"),
     "t.yaml:5:17: sharing.timeSlicing.resources[0].devices[0]: \"GPU-1234\" "
     "is not a GPU index, a MIG index (i:j), or a GPU-/MIG- UUID"},
    {"DevicesNested", OneShared("      devices: [[0]]\n      replicas: 2\n"),
     "t.yaml:5:17: sharing.timeSlicing.resources[0].devices[0]: expected a "
     "string, got a list"},
    {"SharingWithoutResources",
     "sharing:\n  timeSlicing:\n    renameByDefault: true\n",
     "t.yaml:3:5: sharing.timeSlicing.resources: required key is missing"},
    {"SharingEmptyResources", "sharing:\n  mps:\n    resources: []\n",
     "t.yaml:3:16: sharing.mps.resources: no resources specified"},
    {"ResourceNotMap", "sharing:\n  mps:\n    resources: [gpu]\n",
     "t.yaml:3:17: sharing.mps.resources[0]: expected a map, got \"gpu\""},
    {"CdiPrefix", "flags:\n  plugin:\n    cdiAnnotationPrefix: cdi.k8s.io\n",
     "t.yaml:3:26: flags.plugin.cdiAnnotationPrefix: \"cdi.k8s.io\" is not a "
     "CDI annotation prefix: it needs a DNS subdomain followed by '/', such "
     "as cdi.k8s.io/"},
    {"RelativeDriverRoot", "flags:\n  nvidiaDriverRoot: run/nvidia/driver\n",
     "t.yaml:2:21: flags.nvidiaDriverRoot: must be an absolute path, got "
     "\"run/nvidia/driver\""},
    {"EmptyCtkPath", "flags:\n  plugin:\n    nvidiaCTKPath: \"\"\n",
     "t.yaml:3:20: flags.plugin.nvidiaCTKPath: must be an absolute path, got "
     "\"\""},
    {"ImexChannel", "imex:\n  channelIDs: [1]\n",
     "t.yaml:2:15: imex.channelIDs: must be [] or [0]; found [1]"},
    {"PatternMissing", "resources:\n  gpus:\n  - name: a100\n",
     "t.yaml:3:5: resources.gpus[0].pattern: required key is missing"},
    {"PatternEmpty", "resources:\n  gpus:\n  - {pattern: '', name: a100}\n",
     "t.yaml:3:15: resources.gpus[0].pattern: must not be empty"},
    {"MpsWithMixedMig",
     "flags:\n  migStrategy: mixed\n  mpsRoot: /run/nvidia/mps\n"
     "sharing:\n  mps:\n    resources: [{name: gpu, replicas: 2}]\n",
     "t.yaml:2:16: flags.migStrategy: mixed is not supported together with "
     "sharing.mps"},
    {"MpsWithoutRoot",
     "flags:\n  migStrategy: single\n"
     "sharing:\n  mps:\n    resources: [{name: gpu, replicas: 2}]\n",
     "t.yaml:2:3: flags.mpsRoot: sharing.mps needs an MPS root directory "
     "(--mps-root, MPS_ROOT or flags.mpsRoot)"},
    {"MpsAndTimeSlicing",
     "flags: {mpsRoot: /mps}\nsharing:\n"
     "  timeSlicing: {resources: [{name: gpu, replicas: 2}]}\n"
     "  mps: {resources: [{name: gpu, replicas: 2}]}\n",
     "t.yaml:4:8: sharing.mps: cannot be combined with sharing.timeSlicing; "
     "choose one (NVIDIA's plugin would silently ignore timeSlicing)"},
    {"StringWithControlCharacter", "flags:\n  mpsRoot: \"/a\\tb\"\n",
     "t.yaml:2:12: flags.mpsRoot: contains a control character"},
    {"NonScalarKey", "flags:\n  [a]: b\n",
     "t.yaml:2:3: flags: map keys must be strings, got a list"},
    {"HealthUnknownKey", "health:\n  quiet: 5m\n",
     "t.yaml:2:3: health.quiet: unknown key \"quiet\" (known keys: disabled, "
     "quietPeriod, ignoredXids, xids)"},
    {"HealthQuietPeriodNoUnit", "health:\n  quietPeriod: 300\n",
     "t.yaml:2:16: health.quietPeriod: \"300\" is not a duration (a "
     "non-negative number with a unit, e.g. \"30s\", \"5m\", \"1h30m\")"},
    {"HealthQuietPeriodNegative", "health:\n  quietPeriod: -5m\n",
     "t.yaml:2:16: health.quietPeriod: \"-5m\" is not a duration (a "
     "non-negative number with a unit, e.g. \"30s\", \"5m\", \"1h30m\")"},
    {"HealthDisabledNotBool", "health:\n  disabled: maybe\n",
     "t.yaml:2:13: health.disabled: expected true or false, got \"maybe\""},
    {"HealthIgnoredXidZero", "health:\n  ignoredXids: [13, 0]\n",
     "t.yaml:2:21: health.ignoredXids[1]: an Xid is a positive number, got 0"},
    {"HealthIgnoredXidNotNumber", "health:\n  ignoredXids: [x]\n",
     "t.yaml:2:17: health.ignoredXids[0]: expected an integer, got \"x\""},
    {"HealthXidAction", "health:\n  xids:\n  - {codes: [48], action: drain}\n",
     "t.yaml:3:27: health.xids[0].action: unknown value \"drain\" (expected "
     "one of: ignore, unhealthy, reset)"},
    {"HealthXidActionMissing", "health:\n  xids:\n  - codes: [48]\n",
     "t.yaml:3:5: health.xids[0].action: required key is missing"},
    {"HealthXidCodesMissing", "health:\n  xids:\n  - action: reset\n",
     "t.yaml:3:5: health.xids[0].codes: required key is missing"},
    {"HealthXidCodesEmpty",
     "health:\n  xids:\n  - {codes: [], action: reset}\n",
     "t.yaml:3:13: health.xids[0].codes: must list at least one Xid"},
    {"HealthXidTwice",
     "health:\n  xids:\n  - {codes: [48, 63], action: reset}\n"
     "  - {codes: [79, 63], action: unhealthy}\n",
     "t.yaml:4:18: health.xids[1].codes[1]: Xid 63 already has an action "
     "(health.xids[0].codes[1])"},
    {"HealthXidIgnoredAndFatal",
     "health:\n  ignoredXids: [79]\n  xids:\n"
     "  - {codes: [79], action: unhealthy}\n",
     "t.yaml:4:14: health.xids[0].codes[0]: Xid 79 is also ignored by "
     "health.ignoredXids[0]; choose one"},
    {"MetricsAddressNoPort", "metrics:\n  address: localhost\n",
     "t.yaml:2:12: metrics.address: \"localhost\" is not host:port with a "
     "port in [0, 65535] (e.g. \":9400\", \"127.0.0.1:9400\", "
     "\"[::1]:9400\")"},
    {"MetricsAddressBigPort", "metrics:\n  address: \":70000\"\n",
     "t.yaml:2:12: metrics.address: \":70000\" is not host:port with a port "
     "in [0, 65535] (e.g. \":9400\", \"127.0.0.1:9400\", \"[::1]:9400\")"},
    {"MetricsAddressUnbracketedIpv6", "metrics:\n  address: \"::1:80\"\n",
     "t.yaml:2:12: metrics.address: \"::1:80\" is not host:port with a port "
     "in [0, 65535] (e.g. \":9400\", \"127.0.0.1:9400\", \"[::1]:9400\")"},
    {"MetricsCertWithoutKey", "metrics:\n  tlsCertFile: /c.pem\n",
     "t.yaml:2:16: metrics.tlsCertFile: needs its key too: give "
     "metrics.tlsKeyFile (--metrics-tls-key-file)"},
    {"MetricsKeyWithoutCert", "metrics:\n  tlsKeyFile: /k.pem\n",
     "t.yaml:2:15: metrics.tlsKeyFile: needs its certificate too: give "
     "metrics.tlsCertFile (--metrics-tls-cert-file)"},
    {"MetricsClientCaWithoutCert", "metrics:\n  clientCAFile: /ca.pem\n",
     "t.yaml:2:17: metrics.clientCAFile: client certificates need TLS: give "
     "metrics.tlsCertFile and metrics.tlsKeyFile (--metrics-tls-cert-file, "
     "--metrics-tls-key-file)"},
    {"MemoryUnit", "sharing:\n  memory:\n    unit: 3KiB\n",
     "t.yaml:3:11: sharing.memory.unit: \"3KiB\" is not a memory unit: "
     "expected MiB, GiB or a size such as 512MiB or 2GiB, between 1MiB and "
     "1024GiB"},
    {"MemoryMaxDevicesPerNode",
     "sharing:\n  memory:\n    maxDevicesPerNode: 40000\n",
     "t.yaml:3:24: sharing.memory.maxDevicesPerNode: must be in [1, 32768], "
     "got 40000"},
    {"MemoryMigDevice", "sharing:\n  memory:\n    devices: [\"0:1\"]\n",
     "t.yaml:3:15: sharing.memory.devices[0]: \"0:1\" is not a GPU index or "
     "a GPU- UUID (memory shares are of whole GPUs)"},
    {"MemoryResourceName",
     "sharing:\n  memory:\n    resourceName: Example.com/x\n",
     "t.yaml:3:19: sharing.memory.resourceName: resource name "
     "\"Example.com/x\" is not <domain>/<name> with both lowercase DNS names "
     "(letters, digits, '-' and '.') and a name of at most 63 characters"},
    {"MemoryPendingTimeout", "sharing:\n  memory:\n    pendingTimeout: 0s\n",
     "t.yaml:3:21: sharing.memory.pendingTimeout: must be at least 1s, got 0"},
    {"MemoryResyncPeriod", "sharing:\n  memory:\n    resyncPeriod: 5s\n",
     "t.yaml:3:19: sharing.memory.resyncPeriod: must be at least 10s, got 5s"},
    {"MemoryMpsWithoutRoot", "sharing:\n  memory:\n    mps: {enabled: true}\n",
     "t.yaml:3:20: sharing.memory.mps.enabled: MPS for memory shares needs "
     "an MPS root directory (--mps-root, MPS_ROOT or flags.mpsRoot)"},
    {"MemoryMpsComputeWithoutMps",
     "sharing:\n  memory:\n    mps: {computeByShare: true}\n",
     "t.yaml:3:27: sharing.memory.mps.computeByShare: needs "
     "sharing.memory.mps.enabled: true"},
    {"MemoryMpsUnknownKey", "sharing:\n  memory:\n    mps: {enable: true}\n",
     "t.yaml:3:11: sharing.memory.mps.enable: unknown key \"enable\" (did you "
     "mean \"enabled\"?)"},
    {"MemoryPolicy", "sharing:\n  memory:\n    policy: fill\n",
     "t.yaml:3:13: sharing.memory.policy: unknown value \"fill\" (expected "
     "one of: binpack, spread)"},
};

INSTANTIATE_TEST_SUITE_P(
    Table, BadConfigTest, ::testing::ValuesIn(kBadCases),
    [](const ::testing::TestParamInfo<BadCase>& param_info) {
      return std::string(param_info.param.name);
    });

TEST(ValidateTest, FileTooLarge) {
  std::string yaml = "version: v1\n# " + std::string(kMaxConfigFileBytes, 'x');
  absl::Status s = Check(yaml);
  EXPECT_EQ(std::string(s.message()),
            "t.yaml: config file is 1048590 bytes; the limit is 1048576");
}

TEST(ValidateTest, NestingTooDeep) {
  std::string yaml = "flags: " + std::string(100, '[') + std::string(100, ']');
  EXPECT_EQ(std::string(Check(yaml).message()),
            "t.yaml:1:1: nesting deeper than 32 levels");
}

TEST(ValidateTest, ProgrammaticConfigWithoutOriginsNamesThePath) {
  Config c;
  c.sharing.time_slicing = ReplicatedResources{
      false, false, {ReplicatedResource{"nvidia.com/gpu", "", {}, 1}}};
  EXPECT_EQ(std::string(Validate(c).message()),
            "sharing.timeSlicing.resources[0].replicas: must be >= 2, got 1");
  c.sharing.time_slicing->resources[0] = ReplicatedResource{"gpu", "", {}, 2};
  EXPECT_EQ(std::string(Validate(c).message()),
            "sharing.timeSlicing.resources[0].name: \"gpu\" lacks the "
            "\"nvidia.com/\" prefix (nvidia.com/gpu)");
}

TEST(ValidateTest, HealthAndMetricsSectionsAccepted) {
  EXPECT_TRUE(Check("health:\n  disabled: false\n  quietPeriod: 1h30m\n"
                    "  ignoredXids: [999]\n"
                    "  xids:\n  - {codes: [31, 43], action: unhealthy}\n"
                    "  - {codes: [999], action: ignore}\n"
                    "metrics:\n  address: \"[::1]:0\"\n")
                  .ok());
  for (const char* address : {"\":9400\"", "127.0.0.1:9400", "\"\""}) {
    EXPECT_TRUE(
        Check(std::string("metrics: {address: ") + address + "}\n").ok())
        << address;
  }
}

TEST(ValidateTest, MpsWithSingleMigIsAllowedAsInNvidia) {
  EXPECT_TRUE(Check("flags:\n  migStrategy: single\n  mpsRoot: /run/mps\n"
                    "sharing:\n  mps:\n    resources: [{name: gpu, "
                    "replicas: 2}]\n")
                  .ok());
}

}  // namespace
}  // namespace gpulet::config

namespace gpulet::config {
namespace {

TEST(ValidateTest, OneResourceSplitOverEntriesWithDeviceLists) {
  EXPECT_TRUE(Check("sharing:\n  timeSlicing:\n    resources:\n"
                    "    - {name: gpu, replicas: 2, devices: [0, 1]}\n"
                    "    - {name: gpu, replicas: 8, devices: [2, 3]}\n")
                  .ok());
  EXPECT_TRUE(Check("sharing:\n  timeSlicing:\n    renameByDefault: true\n"
                    "    resources:\n"
                    "    - {name: gpu, replicas: 2, devices: [0]}\n"
                    "    - {name: gpu, replicas: 8, devices: [1]}\n")
                  .ok());
}

}  // namespace
}  // namespace gpulet::config
