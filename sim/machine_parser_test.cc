// ParseMachine on machine files it accepts: defaults, models, the driver
// section, memory units, topology, NVLinks, MIG devices and custom profile
// tables; and hostile inputs that must never throw. The files it refuses
// are in machine_parser_reject_test.cc.
#include "sim/machine_parser.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/testing/machine_yaml.h"

namespace gpulet::sim {
namespace {

using test_yaml::GpuEntry;
using test_yaml::kUuid0;
using test_yaml::TwoGpus;

Machine MustParse(const std::string& yaml) {
  absl::StatusOr<Machine> m = ParseMachine(yaml, "m.yaml");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Machine{};
}

TEST(ParseMachineTest, MinimalGpuGetsDefaults) {
  Machine m =
      MustParse(absl::StrCat("gpus:\n", GpuEntry(kUuid0, "0000:07:00.0")));
  EXPECT_EQ(m.source, "m.yaml");
  EXPECT_TRUE(m.driver_loaded);
  EXPECT_EQ(m.driver_version, "550.54.15");
  EXPECT_EQ(m.nvml_version, "12.550.54.15");
  EXPECT_EQ(m.cuda_driver_version, 12040);
  ASSERT_EQ(m.gpus.size(), 1u);
  const Gpu& g = m.gpus[0];
  EXPECT_EQ(g.name, "Test GPU");
  EXPECT_EQ(g.uuid, kUuid0);
  EXPECT_EQ(g.bus_id, "00000000:07:00.0");
  EXPECT_EQ(g.minor, 0u);
  EXPECT_EQ(g.serial.size(), 13u);
  EXPECT_EQ(g.numa_node, -1);
  EXPECT_EQ(g.memory_total, uint64_t{16} << 30);
  EXPECT_EQ(g.memory_used, 0u);
  EXPECT_EQ(g.architecture, NVML_DEVICE_ARCH_UNKNOWN);
  EXPECT_FALSE(g.mig_capable);
  EXPECT_EQ(g.max_mig_devices, 0u);
  EXPECT_EQ(g.supported_events & nvmlEventTypeXidCriticalError,
            static_cast<uint64_t>(nvmlEventTypeXidCriticalError));
  EXPECT_EQ(g.supported_events & nvmlEventMigConfigChange, 0u);
  ASSERT_EQ(m.topology.size(), 1u);
  EXPECT_EQ(m.topology[0][0], NVML_TOPOLOGY_INTERNAL);
}

TEST(ParseMachineTest, ModelFillsHardwareAndMigTables) {
  Machine m = MustParse(absl::StrCat(
      "gpus:\n  - {uuid: ", kUuid0,
      ", busId: \"00000000:07:00.0\", model: A100-SXM4-80GB,\n"
      "     memoryReserved: 512MiB, computeCapability: \"8.6\"}\n"));
  const Gpu& g = m.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g.pci_device_id, 0x20B210DEu);
  EXPECT_EQ(g.memory_total, uint64_t{81920} << 20);
  EXPECT_EQ(g.memory_reserved, uint64_t{512} << 20);
  EXPECT_EQ(g.memory_used, g.memory_reserved);
  EXPECT_EQ(g.cc_major, 8);
  EXPECT_EQ(g.cc_minor, 6);  // the file overrides the model
  EXPECT_EQ(g.architecture, NVML_DEVICE_ARCH_AMPERE);
  EXPECT_TRUE(g.mig_capable);
  EXPECT_FALSE(g.mig_enabled);
  EXPECT_EQ(g.max_mig_devices, 7u);
  EXPECT_EQ(g.gi_profiles.size(), 7u);
  EXPECT_NE(g.supported_events & nvmlEventMigConfigChange, 0u);
}

TEST(ParseMachineTest, KnownNameImpliesModel) {
  Machine m = MustParse(absl::StrCat(
      "gpus:\n  - {uuid: ", kUuid0,
      ", busId: \"0000:07:00.0\", name: NVIDIA H100 80GB HBM3}\n"));
  EXPECT_EQ(m.gpus[0].architecture, NVML_DEVICE_ARCH_HOPPER);
  EXPECT_EQ(m.gpus[0].memory_total, uint64_t{81559} << 20);
}

TEST(ParseMachineTest, GpuDefaultsApplyUnlessOverridden) {
  Machine m = MustParse(absl::StrCat(
      "gpuDefaults: {numaNode: 1, cpuAffinity: \"0-3,8\", brand: Tesla,\n"
      "              events: [xid, dbe]}\n",
      TwoGpus("    numaNode: 0\n")));
  EXPECT_EQ(m.gpus[0].numa_node, 0);
  EXPECT_EQ(m.gpus[1].numa_node, 1);
  EXPECT_EQ(m.gpus[1].cpu_affinity, (std::vector<unsigned>{0, 1, 2, 3, 8}));
  EXPECT_EQ(m.gpus[1].brand, NVML_BRAND_TESLA);
  EXPECT_EQ(m.gpus[1].supported_events,
            static_cast<uint64_t>(nvmlEventTypeXidCriticalError |
                                  nvmlEventTypeDoubleBitEccError));
  // Without a topology section: same NUMA node is NODE, else SYS.
  EXPECT_EQ(m.topology[0][1], NVML_TOPOLOGY_SYSTEM);
}

TEST(ParseMachineTest, Api13Facts) {
  Machine m = MustParse(absl::StrCat(
      "driver: {version: \"580.82.07\", cudaVersion: 13000}\n"
      "imexChannels: 16\n",
      TwoGpus("    architecture: blackwell\n"
              "    events: [xid, gpuUnavailable, gpuRecoveryAction, sbeStorm,\n"
              "             dramRetirement, dramRetirementFailure,\n"
              "             nonFatalPoison, fatalPoison]\n"
              "    fabric: {clusterUuid: "
              "\"190ABD46-89ce-5965-bb4c-944992ac3cd5\",\n"
              "             cliqueId: 7, state: inProgress,\n"
              "             healthSummary: limitedCapacity}\n"
              "    nvlinks:\n      - {nvswitch: \"0000:c4:00.0\", count: 36}\n",
              "    architecture: rubin\n")));
  EXPECT_EQ(m.nvml_version, "13.580.82.07");
  EXPECT_EQ(m.imex_channels, 16u);
  const Gpu& g = m.gpus[0];
  EXPECT_EQ(g.architecture, static_cast<nvmlDeviceArchitecture_t>(10));
  EXPECT_EQ(m.gpus[1].architecture, static_cast<nvmlDeviceArchitecture_t>(13));
  EXPECT_EQ(g.supported_events,
            static_cast<uint64_t>(nvmlEventTypeXidCriticalError | 0xFE00));
  EXPECT_EQ(g.nvlinks.size(), 36u);
  ASSERT_TRUE(g.fabric.has_value());
  EXPECT_EQ(g.fabric->cluster_uuid[0], 0x19);
  EXPECT_EQ(g.fabric->cluster_uuid[15], 0xd5);
  EXPECT_EQ(g.fabric->clique_id, 7u);
  EXPECT_EQ(g.fabric->state, NVML_GPU_FABRIC_STATE_IN_PROGRESS);
  EXPECT_EQ(g.fabric->health_summary,
            NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY);
  EXPECT_FALSE(m.gpus[1].fabric.has_value());
}

TEST(ParseMachineTest, DriverSection) {
  Machine m = MustParse(
      "driver: {version: \"535.104.05\", cudaVersion: \"12.2\"}\ngpus: []\n");
  EXPECT_EQ(m.driver_version, "535.104.05");
  EXPECT_EQ(m.nvml_version, "12.535.104.05");
  EXPECT_EQ(m.cuda_driver_version, 12020);
  m = MustParse(
      "driver: {loaded: false, initError: NO_PERMISSION}\ngpus: []\n");
  EXPECT_FALSE(m.driver_loaded);
  EXPECT_EQ(m.init_error, NVML_ERROR_NO_PERMISSION);
}

TEST(ParseMachineTest, ProductName) {
  EXPECT_EQ(MustParse("productName: \"DGX H100\"\ngpus: []\n").product_name,
            "DGX H100");
  EXPECT_EQ(MustParse("gpus: []\n").product_name, "");
  EXPECT_FALSE(ParseMachine("productName: [a]\ngpus: []\n", "m.yaml").ok());
}

TEST(ParseMachineTest, MemoryUnits) {
  Machine m = MustParse(
      absl::StrCat("gpus:\n  - {uuid: ", kUuid0,
                   ", busId: \"0000:07:00.0\", name: x, memory: 4.75GiB,\n"
                   "     memoryUsed: \"2 MiB\", memoryReserved: 1024}\n"));
  EXPECT_EQ(m.gpus[0].memory_total, uint64_t{4864} << 20);
  EXPECT_EQ(m.gpus[0].memory_reserved, 1024u);
  EXPECT_EQ(m.gpus[0].memory_used, uint64_t{2} << 20);
  EXPECT_FALSE(ParseMachine(absl::StrCat("gpus:\n  - {uuid: ", kUuid0,
                                         ", busId: \"0000:07:00.0\", name: x, "
                                         "memory: 1GiB, memoryUsed: 2GiB}\n"),
                            "m.yaml")
                   .ok());
}

TEST(ParseMachineTest, TopologyMatrixAndGroups) {
  Machine m = MustParse(TwoGpus() +
                        "topology:\n  matrix:\n    - \"X   PIX\"\n"
                        "    - [SINGLE, X]\n");
  EXPECT_EQ(m.topology[0][1], NVML_TOPOLOGY_SINGLE);
  EXPECT_EQ(m.topology[1][0], NVML_TOPOLOGY_SINGLE);
  m = MustParse(TwoGpus() +
                "topology:\n  default: PHB\n  groups: [{gpus: [0, 1], "
                "level: PXB}]\n");
  EXPECT_EQ(m.topology[0][1], NVML_TOPOLOGY_MULTIPLE);
  m = MustParse(TwoGpus() + "topology: {default: HOSTBRIDGE}\n");
  EXPECT_EQ(m.topology[1][0], NVML_TOPOLOGY_HOSTBRIDGE);
  EXPECT_EQ(m.topology[1][1], NVML_TOPOLOGY_INTERNAL);
}

TEST(ParseMachineTest, NvLinksResolveRemoteBusIds) {
  Machine m =
      MustParse(TwoGpus("    nvlinks:\n      - {gpu: 1, count: 2}\n"
                        "      - {nvswitch: \"0000:c4:00.0\", active: false}\n",
                        "    nvlinks: [{gpu: 0, count: 2}]\n"));
  ASSERT_EQ(m.gpus[0].nvlinks.size(), 3u);
  EXPECT_EQ(m.gpus[0].nvlinks[0].peer_gpu, 1);
  EXPECT_EQ(m.gpus[0].nvlinks[0].remote_bus_id, "00000000:0F:00.0");
  EXPECT_EQ(m.gpus[0].nvlinks[2].remote_type, NVML_NVLINK_DEVICE_TYPE_SWITCH);
  EXPECT_EQ(m.gpus[0].nvlinks[2].remote_bus_id, "00000000:C4:00.0");
  EXPECT_FALSE(m.gpus[0].nvlinks[2].active);
  EXPECT_EQ(m.gpus[1].nvlinks[1].remote_bus_id, "00000000:07:00.0");
}

TEST(ParseMachineTest, MigDevicesWithSeveralComputeInstances) {
  Machine m = MustParse(absl::StrCat(
      "gpus:\n  - uuid: ", kUuid0,
      "\n    busId: \"0000:07:00.0\"\n    model: A100-SXM4-40GB\n"
      "    mig:\n      mode: enabled\n      devices:\n"
      "        - {profile: 3g.20gb, placement: 4, gi: 2, ci: 0, ciSlices: 1,\n"
      "           uuid: MIG-00000000-0000-4000-8000-000000000001}\n"
      "        - {profile: 3g.20gb, placement: 4, gi: 2, ci: 1, ciSlices: 2,\n"
      "           ciPlacement: 1, uuid: "
      "MIG-00000000-0000-4000-8000-000000000002}\n"
      "        - {profile: 1g.5gb+me, placement: 0, gi: 7,\n"
      "           uuid: MIG-00000000-0000-4000-8000-000000000003}\n"));
  const Gpu& g = m.gpus[0];
  EXPECT_TRUE(g.mig_enabled);
  EXPECT_TRUE(g.mig_pending);
  ASSERT_EQ(g.mig_devices.size(), 3u);
  const MigDevice& d = g.mig_devices[1];
  EXPECT_EQ(d.gpu_instance_id, 2u);
  EXPECT_EQ(d.gpu_instance_profile_id,
            static_cast<unsigned>(NVML_GPU_INSTANCE_PROFILE_3_SLICE));
  EXPECT_EQ(d.gi_placement_start, 4u);
  EXPECT_EQ(d.gi_placement_size, 4u);
  EXPECT_EQ(d.compute_instance_id, 1u);
  EXPECT_EQ(d.compute_instance_profile_id,
            static_cast<unsigned>(NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE));
  EXPECT_EQ(d.ci_placement_start, 1u);
  EXPECT_EQ(d.ci_placement_size, 2u);
  EXPECT_EQ(g.mig_devices[2].gpu_instance_profile_id,
            static_cast<unsigned>(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1));
}

TEST(ParseMachineTest, CustomProfileTables) {
  Machine m = MustParse(absl::StrCat(
      "gpus:\n  - uuid: ", kUuid0,
      "\n    busId: \"0000:07:00.0\"\n    name: Future GPU\n    memory: 8GiB\n"
      "    mig:\n      capable: true\n      maxDevices: 2\n"
      "      mode: disabled\n      pending: enabled\n"
      "      giProfiles:\n"
      "        - {id: 0, profileId: 19, name: 1g.4gb, slices: 1, instances: "
      "2,\n"
      "           memory: 4GiB, multiprocessors: 8, placements: [0, 1]}\n"
      "      ciProfiles: [{id: 0, slices: 1, instances: 1}]\n"));
  const Gpu& g = m.gpus[0];
  EXPECT_TRUE(g.mig_capable);
  EXPECT_FALSE(g.mig_enabled);
  EXPECT_TRUE(g.mig_pending);
  ASSERT_EQ(g.gi_profiles.size(), 1u);
  EXPECT_EQ(g.gi_profiles[0].profile_id, 19u);
  EXPECT_EQ(g.gi_profiles[0].memory_size_mb, 4096u);
  EXPECT_EQ(g.gi_profiles[0].placement_size, 1u);
}

TEST(ParseMachineTest, HostileInputsNeverThrow) {
  const char* inputs[] = {
      "",
      "~",
      "---\n...\n",
      "&a [*a]",
      "gpus: &a [*a]",
      "{? [a]: b}",
      "gpus: [[[[]]]]",
      "gpus: !!binary aGVsbG8=",
      "\t\tgpus: []",
      "gpus:\n  - &g {uuid: x}\n  - *g\n",
      "%YAML 1.2\n---\ngpus: []",
      "gpus: [{mig: {devices: [{profile: [1]}]}}]",
      "\xff\xfe\x00",
      "gpus: [\"\\u0000\"]",
      "topology: {matrix: [[[x]]]}\ngpus: []",
  };
  for (const char* input : inputs) {
    absl::StatusOr<Machine> m = ParseMachine(input, "m.yaml");
    EXPECT_FALSE(m.ok() && !m->gpus.empty()) << input;
  }
}

}  // namespace
}  // namespace gpulet::sim
