// ParseMachine on machine files it refuses: each rule's error names the
// file, the path in it and, where it can, the line (one table case per
// rule).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/machine_parser.h"
#include "sim/testing/machine_yaml.h"

namespace gpulet::sim {
namespace {

using test_yaml::GpuEntry;
using test_yaml::kUuid0;
using test_yaml::kUuid1;
using test_yaml::TwoGpus;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct RejectCase {
  const char* name;
  std::string yaml;
  std::string message;  // expected substring: "<path>: <what>"
  int line = 0;         // expected 1-based line, 0 = not checked
};

void PrintTo(const RejectCase& c, std::ostream* os) { *os << c.name; }

class RejectTest : public ::testing::TestWithParam<RejectCase> {};

TEST_P(RejectTest, ErrorNamesPathAndLine) {
  const RejectCase& c = GetParam();
  absl::StatusOr<Machine> m = ParseMachine(c.yaml, "m.yaml");
  ASSERT_FALSE(m.ok()) << c.yaml;
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  std::string message(m.status().message());
  EXPECT_THAT(message, StartsWith("m.yaml"));
  EXPECT_THAT(message, HasSubstr(c.message));
  if (c.line > 0) {
    EXPECT_THAT(message, StartsWith(absl::StrCat("m.yaml:", c.line, ":")));
  }
}

const std::string kMig =
    "    model: A100-SXM4-40GB\n    mig:\n      mode: enabled\n";
std::string MigDevice(const std::string& fields, int n) {
  return absl::StrCat("        - {", fields,
                      ", uuid: MIG-00000000-0000-4000-8000-00000000000", n,
                      "}\n");
}
std::string OneGpu(const std::string& extra) {
  return absl::StrCat("gpus:\n", GpuEntry(kUuid0, "0000:07:00.0", extra));
}

std::vector<RejectCase> RejectCases() {
  return {
      {"SyntaxError", "gpus: [\n  - a: b\n", "invalid YAML"},
      {"RootNotMap", "just a string\n", "expected a map"},
      {"UnknownRootKey", "gpu: []\n",
       "gpu: unknown key \"gpu\" (did you mean \"gpus\"?)", 1},
      {"UnknownGpuKey", OneGpu("    colour: red\n"),
       "gpus[0].colour: unknown key \"colour\" (known keys: uuid, busId,", 6},
      {"DuplicateKey", OneGpu("    name: Again\n"),
       "gpus[0].name: duplicate key", 6},
      {"GpusNotList", "gpus: {a: 1}\n", "gpus: expected a list, got a map", 1},
      {"MinorNotInteger", OneGpu("    minor: abc\n"),
       "gpus[0].minor: expected a non-negative integer", 6},
      {"UuidNotString",
       "gpus:\n  - {uuid: [a], busId: \"0000:07:00.0\", name: x, memory: "
       "1GiB}\n",
       "gpus[0].uuid: expected a string, got a list", 2},
      {"MissingGpus", "driver: {}\n", "gpus: required key is missing"},
      {"MissingUuid",
       "gpus:\n  - {busId: \"0000:07:00.0\", name: x, memory: 1GiB}\n",
       "gpus[0].uuid: required key is missing", 2},
      {"MissingName",
       absl::StrCat("gpus:\n  - {uuid: ", kUuid0,
                    ", busId: \"0000:07:00.0\"}\n"),
       "gpus[0].name: required key is missing"},
      {"DuplicateUuid",
       absl::StrCat("gpus:\n", GpuEntry(kUuid0, "0000:07:00.0"),
                    GpuEntry(kUuid0, "0000:0F:00.0")),
       absl::StrCat("gpus[1].uuid: duplicate UUID ", kUuid0,
                    " (also at gpus[0].uuid)"),
       6},
      {"DuplicateBusId",
       absl::StrCat("gpus:\n", GpuEntry(kUuid0, "0000:07:00.0"),
                    GpuEntry(kUuid1, "00000000:07:00.0")),
       "gpus[1].busId: duplicate PCI bus ID 00000000:07:00.0", 7},
      {"DuplicateMinor", TwoGpus("    minor: 1\n"),
       "gpus[1]: duplicate minor number 1 (defaulted to the GPU's index)"},
      {"DuplicateExplicitMinor", TwoGpus("    minor: 3\n", "    minor: 3\n"),
       "gpus[1].minor: duplicate minor number 3 (also at gpus[0].minor)", 11},
      {"MalformedUuid",
       absl::StrCat("gpus:\n", GpuEntry("GPU-1234", "0000:07:00.0")),
       "gpus[0].uuid: malformed UUID \"GPU-1234\"", 2},
      {"UuidBadHex",
       absl::StrCat("gpus:\n",
                    GpuEntry("GPU-0000000g-0000-4000-8000-000000000000",
                             "0000:07:00.0")),
       "malformed UUID"},
      {"MigUuidWrongPrefix",
       OneGpu(kMig +
              "      devices:\n        - {profile: 1g.5gb, placement: 0, "
              "gi: 7, uuid: " +
              std::string(kUuid1) + "}\n"),
       "gpus[0].mig.devices[0].uuid: malformed UUID", 10},
      {"MalformedBusId", absl::StrCat("gpus:\n", GpuEntry(kUuid0, "07:00.0")),
       "gpus[0].busId: malformed PCI bus ID \"07:00.0\"", 3},
      {"BusIdDeviceTooLarge",
       absl::StrCat("gpus:\n", GpuEntry(kUuid0, "0000:07:20.0")),
       "malformed PCI bus ID"},
      {"MatrixRows", TwoGpus() + "topology:\n  matrix: [\"X\"]\n",
       "topology.matrix: has 1 rows for 2 GPUs", 11},
      {"MatrixRowLength",
       TwoGpus() + "topology:\n  matrix:\n    - X PIX\n    - X\n",
       "topology.matrix[1]: has 1 entries; expected 2", 13},
      {"MatrixAsymmetric",
       TwoGpus() + "topology:\n  matrix:\n    - X PIX\n    - SYS X\n",
       "topology.matrix[1][0]: \"SYS\" differs from \"PIX\" at "
       "topology.matrix[0][1]",
       13},
      {"MatrixBadToken",
       TwoGpus() + "topology:\n  matrix:\n    - \"X   FOO\"\n    - PIX X\n",
       "m.yaml:12:12: topology.matrix[0][1]: unknown topology level \"FOO\""},
      {"MatrixNvLinkToken",
       TwoGpus() + "topology:\n  matrix:\n    - [X, NV12]\n    - [NV12, X]\n",
       "topology.matrix[0][1]: \"NV12\" is an NVLink count"},
      {"MatrixXOffDiagonal",
       TwoGpus() + "topology:\n  matrix:\n    - X X\n    - X X\n",
       "topology.matrix[0][1]: X marks a GPU itself"},
      {"MatrixDiagonal",
       TwoGpus() + "topology:\n  matrix:\n    - NODE NODE\n    - NODE X\n",
       "topology.matrix[0][0]: the diagonal must be X"},
      {"MatrixAndGroups",
       TwoGpus() + "topology:\n  matrix: []\n  default: SYS\n",
       "topology.matrix: give either matrix or default/groups"},
      {"GroupOutOfRange",
       TwoGpus() + "topology:\n  groups: [{gpus: \"0-2\", level: PIX}]\n",
       "topology.groups[0].gpus: 2 exceeds the maximum 1"},
      {"GroupTooSmall",
       TwoGpus() + "topology:\n  groups: [{gpus: [1], level: PIX}]\n",
       "a group needs at least two GPUs"},
      {"LinkPeerOutOfRange", TwoGpus("    nvlinks: [{gpu: 5}]\n"),
       "gpus[0].nvlinks[0].gpu: 5 is out of range [0, 1]", 6},
      {"LinkToSelf", TwoGpus("    nvlinks: [{gpu: 0}]\n"),
       "gpus[0].nvlinks[0].gpu: a GPU cannot link to itself"},
      {"LinkNeedsOneEnd",
       TwoGpus("    nvlinks: [{gpu: 1, nvswitch: \"0000:c4:00.0\"}]\n"),
       "gpus[0].nvlinks[0]: a link needs exactly one of gpu"},
      {"TooManyLinks",
       TwoGpus("    nvlinks:\n      - {nvswitch: \"0000:c4:00.0\", count: 36}\n"
               "      - {gpu: 1}\n",
               "    nvlinks: [{gpu: 0}]\n"),
       "gpus[0].nvlinks[1]: brings the GPU to 37 NVLinks; at most 36", 8},
      {"FabricBadClusterUuid",
       TwoGpus("    fabric: {clusterUuid: \"GPU-1\", cliqueId: 1}\n"),
       "gpus[0].fabric.clusterUuid: malformed cluster UUID \"GPU-1\"", 6},
      {"FabricNeedsClique",
       TwoGpus("    fabric: {clusterUuid: "
               "\"190abd46-89ce-5965-bb4c-944992ac3cd5\"}\n"),
       "cliqueId"},
      {"FabricBadState",
       TwoGpus("    fabric: {clusterUuid: "
               "\"190abd46-89ce-5965-bb4c-944992ac3cd5\", cliqueId: 1, "
               "state: done}\n"),
       "gpus[0].fabric.state"},
      {"TooManyImexChannels", "imexChannels: 4096\n" + TwoGpus(),
       "imexChannels: 4096 is out of range [0, 2048]", 1},
      {"AsymmetricLinks",
       TwoGpus("    nvlinks: [{gpu: 1, count: 2}]\n",
               "    nvlinks: [{gpu: 0}]\n"),
       "gpus[0].nvlinks[0]: GPU 0 has 2 NVLinks (2 active) to GPU 1, but GPU 1 "
       "has 1 (1 active) back",
       6},
      {"OneSidedLink", TwoGpus("", "    nvlinks: [{gpu: 0}]\n"),
       "gpus[1].nvlinks[0]: GPU 1 has 1 NVLinks"},
      {"SwitchIsGpu", TwoGpus("    nvlinks: [{nvswitch: \"0000:0f:00.0\"}]\n"),
       "gpus[0].nvlinks[0].nvswitch: NVSwitch bus ID 00000000:0F:00.0 is GPU "
       "1"},
      {"UnknownMigProfile",
       OneGpu(kMig + "      devices:\n" +
              MigDevice("profile: 9g.99gb, placement: 0, gi: 1", 1)),
       "gpus[0].mig.devices[0].profile: unknown MIG profile \"9g.99gb\"", 10},
      {"BadPlacement",
       OneGpu(kMig + "      devices:\n" +
              MigDevice("profile: 3g.20gb, placement: 1, gi: 1", 1)),
       "gpus[0].mig.devices[0].placement: placement 1 is not valid for 3g.20gb "
       "(valid starts: 0, 4)"},
      {"OverlappingPlacements",
       OneGpu(kMig + "      devices:\n" +
              MigDevice("profile: 3g.20gb, placement: 0, gi: 1", 1) +
              MigDevice("profile: 2g.10gb, placement: 2, gi: 3", 2)),
       "gpus[0].mig.devices[1]: placement 2-3 overlaps GPU instance 1 (3g.20gb "
       "at 0-3, gpus[0].mig.devices[0])",
       11},
      {"DuplicateGiId",
       OneGpu(kMig + "      devices:\n" +
              MigDevice("profile: 1g.5gb, placement: 0, gi: 7", 1) +
              MigDevice("profile: 1g.5gb, placement: 1, gi: 7", 2)),
       "gpus[0].mig.devices[1].gi: duplicate GPU instance id 7"},
      {"DuplicateCiId",
       OneGpu(
           kMig + "      devices:\n" +
           MigDevice("profile: 3g.20gb, placement: 0, gi: 1, ciSlices: 1", 1) +
           MigDevice("profile: 3g.20gb, placement: 0, gi: 1, ciSlices: 1, "
                     "ciPlacement: 1",
                     2)),
       "gpus[0].mig.devices[1]: duplicate compute instance id 0 in GPU "
       "instance 1"},
      {"OverlappingCis",
       OneGpu(
           kMig + "      devices:\n" +
           MigDevice("profile: 3g.20gb, placement: 0, gi: 1, ciSlices: 2", 1) +
           MigDevice("profile: 3g.20gb, placement: 0, gi: 1, ci: 1, "
                     "ciSlices: 1",
                     2)),
       "gpus[0].mig.devices[1]: compute slices 0-0 overlap"},
      {"MigDisabled",
       OneGpu("    model: A100-SXM4-40GB\n    mig:\n      devices:\n" +
              MigDevice("profile: 1g.5gb, placement: 0, gi: 7", 1)),
       "gpus[0].mig.devices: MIG devices on a GPU whose MIG mode is disabled",
       9},
      {"MigNotCapable",
       OneGpu("    model: T4\n    mig:\n      mode: enabled\n"),
       "gpus[0].mig.mode: MIG enabled on a GPU that is not MIG-capable", 8},
      {"MigDevicesNotCapable",
       OneGpu("    mig:\n      devices:\n" +
              MigDevice("profile: 1g.5gb, placement: 0, gi: 7", 1)),
       "gpus[0].mig.devices: MIG devices on a GPU that is not MIG-capable"},
      {"MigCapableWithoutTables", OneGpu("    mig: {capable: true}\n"),
       "gpus[0].mig: no MIG profile tables for Test GPU"},
      {"UnknownModel", OneGpu("    model: Z9000\n"),
       "gpus[0].model: unknown GPU model \"Z9000\" (known: A100-SXM4-40GB"},
      {"IdentityInDefaults", "gpuDefaults: {uuid: x}\ngpus: []\n",
       "gpuDefaults.uuid: unknown key"},
      {"InitErrorWhileLoaded", "driver: {initError: UNKNOWN}\ngpus: []\n",
       "driver.initError: initError applies only when loaded is false"},
      {"BadDriverVersion", "driver: {version: banana}\ngpus: []\n",
       "driver.version: expected a version"},
      {"BadArchitecture",
       absl::StrCat("gpus:\n", GpuEntry(kUuid0, "0000:07:00.0",
                                        "    architecture: fermi\n")),
       "gpus[0].architecture: unknown value \"fermi\" (expected one of: "
       "kepler"},
      {"MemoryTooLarge", OneGpu("    memoryReserved: 2TiB\n"),
       "gpus[0].memoryReserved: exceeds"},
      {"MemoryZero",
       absl::StrCat("gpus:\n  - {uuid: ", kUuid0,
                    ", busId: \"0000:07:00.0\", name: x, memory: 0}\n"),
       "gpus[0].memory: GPU memory must not be 0"},
      {"MemoryBadUnit",
       absl::StrCat("gpus:\n  - {uuid: ", kUuid0,
                    ", busId: \"0000:07:00.0\", name: x, memory: 16GB}\n"),
       "gpus[0].memory: expected a size such as 40GiB"},
      {"MinorTooLarge", OneGpu("    minor: 300\n"),
       "gpus[0].minor: 300 is out of range [0, 254]"},
      {"CpuTooLarge", OneGpu("    cpuAffinity: \"0-5000\"\n"),
       "gpus[0].cpuAffinity: 5000 exceeds the maximum 4095"},
      {"CpuReversedRange", OneGpu("    cpuAffinity: \"7-3\"\n"),
       "range 7-3 is reversed"},
      {"NumaTooLarge", OneGpu("    numaNode: 5000\n"),
       "gpus[0].numaNode: 5000 is out of range [-1, 1023]"},
      {"BadComputeCapability", OneGpu("    computeCapability: eight\n"),
       "gpus[0].computeCapability: expected a compute capability"},
      {"DeepNesting", std::string("gpus: ") + std::string(100, '['),
       "nesting deeper than 64 levels", 1},
      {"DeepBlockNesting",
       [] {
         std::string s;
         for (int i = 0; i < 80; ++i) s += std::string(i, ' ') + "a:\n";
         return s;
       }(),
       "nesting deeper than 64 levels", 65},
      {"TooLarge", std::string(kMaxMachineFileBytes + 1, '#'),
       "m.yaml: machine file is 1048577 bytes; the limit is 1048576"},
      {"UndefinedAlias", "gpus: *nothing\n", "invalid YAML"},
  };
}

INSTANTIATE_TEST_SUITE_P(
    Rules, RejectTest, ::testing::ValuesIn(RejectCases()),
    [](const ::testing::TestParamInfo<RejectCase>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace gpulet::sim
