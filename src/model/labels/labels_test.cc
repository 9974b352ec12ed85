#include "src/model/labels/labels.h"

#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::labels {
namespace {

using ::testing::Contains;
using ::testing::Key;
using ::testing::Not;

constexpr uint64_t kMiB = 1024 * 1024;

device::Gpu A100(unsigned index) {
  device::Gpu gpu;
  gpu.index = index;
  gpu.uuid = "GPU-" + std::to_string(index);
  gpu.name = "NVIDIA A100-SXM4-40GB";
  gpu.memory_total_bytes = 40960 * kMiB;
  gpu.cc_major = 8;
  gpu.cc_minor = 0;
  gpu.mig_capable = true;
  return gpu;
}

device::MigDevice Mig(const std::string& profile, unsigned gi_slices,
                      uint64_t mib) {
  device::MigDevice mig;
  mig.profile = profile;
  mig.gi_slice_count = gi_slices;
  mig.ci_slice_count = gi_slices;
  mig.memory_bytes = mib * kMiB;
  mig.multiprocessor_count = 14 * gi_slices;
  mig.copy_engine_count = gi_slices;
  mig.decoder_count = gi_slices / 2;
  return mig;
}

device::Node Node(std::vector<device::Gpu> gpus) {
  device::Node node;
  node.driver_version = "550.54.15";
  node.cuda_driver_version = 12040;
  node.gpus = std::move(gpus);
  return node;
}

config::Config TimeSliced(int replicas, const std::string& rename = "",
                          const std::string& name = "nvidia.com/gpu") {
  config::Config c;
  config::ReplicatedResources ts;
  ts.resources.push_back({name, rename, {}, replicas});
  c.sharing.time_slicing = ts;
  return c;
}

TEST(LabelsTest, WholeGpusWithoutSharing) {
  Labels l = ComputeLabels(Node({A100(0), A100(1)}), config::Config{}, {});
  EXPECT_EQ(l, (Labels{
                   {"nvidia.com/cuda.driver-version.full", "550.54.15"},
                   {"nvidia.com/cuda.driver-version.major", "550"},
                   {"nvidia.com/cuda.driver-version.minor", "54"},
                   {"nvidia.com/cuda.driver-version.revision", "15"},
                   {"nvidia.com/cuda.driver.major", "550"},
                   {"nvidia.com/cuda.driver.minor", "54"},
                   {"nvidia.com/cuda.driver.rev", "15"},
                   {"nvidia.com/cuda.runtime-version.full", "12.4"},
                   {"nvidia.com/cuda.runtime-version.major", "12"},
                   {"nvidia.com/cuda.runtime-version.minor", "4"},
                   {"nvidia.com/cuda.runtime.major", "12"},
                   {"nvidia.com/cuda.runtime.minor", "4"},
                   {"nvidia.com/gpu.compute.major", "8"},
                   {"nvidia.com/gpu.compute.minor", "0"},
                   {"nvidia.com/gpu.count", "2"},
                   {"nvidia.com/gpu.family", "ampere"},
                   {"nvidia.com/gpu.machine", "unknown"},
                   {"nvidia.com/gpu.memory", "40960"},
                   {"nvidia.com/gpu.mode", "unknown"},
                   {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"},
                   {"nvidia.com/gpu.replicas", "1"},
                   {"nvidia.com/gpu.sharing-strategy", "none"},
                   {"nvidia.com/mig.capable", "true"},
                   {"nvidia.com/mps.capable", "false"},
               }));
}

TEST(LabelsTest, NoGpusGivesOnlyTheMachineAndTimestamp) {
  NodeFacts facts;
  facts.machine_type = "PowerEdge R750";
  facts.timestamp = 1700000000;
  EXPECT_EQ(ComputeLabels(Node({}), config::Config{}, facts),
            (Labels{{"nvidia.com/gfd.timestamp", "1700000000"},
                    {"nvidia.com/gpu.machine", "PowerEdge-R750"}}));
}

struct SharingCase {
  std::string name;
  config::Config config;
  std::string product, replicas, strategy;
};

TEST(LabelsTest, SharingRules) {
  config::Config mps = TimeSliced(3);
  mps.sharing.mps = mps.sharing.time_slicing;
  mps.sharing.time_slicing.reset();
  config::Config one = TimeSliced(1);
  const std::vector<SharingCase> cases = {
      {"shared, not renamed", TimeSliced(4), "NVIDIA-A100-SXM4-40GB-SHARED",
       "4", "time-slicing"},
      {"renamed (renameByDefault fills rename in)",
       TimeSliced(4, "nvidia.com/gpu.shared"), "NVIDIA-A100-SXM4-40GB", "4",
       "time-slicing"},
      {"one replica is not shared", one, "NVIDIA-A100-SXM4-40GB", "1", "none"},
      {"another resource shared", TimeSliced(4, "", "nvidia.com/mig-1g.5gb"),
       "NVIDIA-A100-SXM4-40GB", "1", "none"},
      {"mps", mps, "NVIDIA-A100-SXM4-40GB-SHARED", "3", "mps"},
  };
  for (const SharingCase& c : cases) {
    Labels l = ComputeLabels(Node({A100(0)}), c.config, {});
    EXPECT_EQ(l["nvidia.com/gpu.product"], c.product) << c.name;
    EXPECT_EQ(l["nvidia.com/gpu.replicas"], c.replicas) << c.name;
    EXPECT_EQ(l["nvidia.com/gpu.sharing-strategy"], c.strategy) << c.name;
  }
  EXPECT_EQ(ComputeLabels(Node({A100(0)}), mps, {})["nvidia.com/mps.capable"],
            "true");
}

TEST(LabelsTest, MixedStrategyLabelsEveryProfile) {
  device::Gpu g0 = A100(0);
  g0.mig_enabled = true;
  g0.mig_devices = {Mig("3g.20gb", 3, 19968), Mig("1g.5gb", 1, 4864),
                    Mig("1g.5gb", 1, 4864)};
  config::Config c = TimeSliced(2, "", "nvidia.com/mig-1g.5gb");
  c.flags.mig_strategy = config::MigStrategy::kMixed;
  Labels l = ComputeLabels(Node({g0, A100(1)}), c, {});
  EXPECT_EQ(l["nvidia.com/mig.strategy"], "mixed");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "2");
  EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-A100-SXM4-40GB");
  EXPECT_EQ(l["nvidia.com/mig-1g.5gb.count"], "2");
  EXPECT_EQ(l["nvidia.com/mig-1g.5gb.product"],
            "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED");
  EXPECT_EQ(l["nvidia.com/mig-1g.5gb.replicas"], "2");
  EXPECT_EQ(l["nvidia.com/mig-1g.5gb.sharing-strategy"], "time-slicing");
  EXPECT_EQ(l["nvidia.com/mig-1g.5gb.memory"], "4864");
  EXPECT_EQ(l["nvidia.com/mig-1g.5gb.multiprocessors"], "14");
  EXPECT_EQ(l["nvidia.com/mig-1g.5gb.slices.gi"], "1");
  EXPECT_EQ(l["nvidia.com/mig-1g.5gb.slices.ci"], "1");
  EXPECT_EQ(l["nvidia.com/mig-1g.5gb.engines.copy"], "1");
  EXPECT_EQ(l["nvidia.com/mig-1g.5gb.engines.decoder"], "0");
  EXPECT_EQ(l["nvidia.com/mig-3g.20gb.count"], "1");
  EXPECT_EQ(l["nvidia.com/mig-3g.20gb.product"],
            "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb");
  EXPECT_EQ(l["nvidia.com/mig-3g.20gb.replicas"], "1");
  EXPECT_EQ(l["nvidia.com/mig-3g.20gb.engines.decoder"], "1");
}

TEST(LabelsTest, MixedProfileNamesFollowTheResourceNames) {
  device::Gpu g0 = A100(0);
  g0.mig_enabled = true;
  g0.mig_devices = {Mig("1g.10gb+me", 1, 9856)};
  config::Config c;
  c.flags.mig_strategy = config::MigStrategy::kMixed;
  Labels l = ComputeLabels(Node({g0}), c, {});
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.me.count"], "1");
  // GFD drops the '+' from the product.
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.me.product"],
            "NVIDIA-A100-SXM4-40GB-MIG-1g.10gbme");
  // Only MIG-enabled GPUs: nvidia.com/gpu.* without sharing.
  EXPECT_EQ(l["nvidia.com/gpu.replicas"], "0");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "1");
}

TEST(LabelsTest, SingleStrategyOverridesTheGpuLabels) {
  std::vector<device::Gpu> gpus = {A100(0), A100(1)};
  for (device::Gpu& g : gpus) {
    g.mig_enabled = true;
    g.mig_devices = {Mig("1g.5gb", 1, 4864), Mig("1g.5gb", 1, 4864)};
  }
  config::Config c = TimeSliced(2);
  c.flags.mig_strategy = config::MigStrategy::kSingle;
  Labels l = ComputeLabels(Node(gpus), c, {});
  EXPECT_EQ(l["nvidia.com/mig.strategy"], "single");
  EXPECT_EQ(l["nvidia.com/gpu.product"],
            "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "4");
  EXPECT_EQ(l["nvidia.com/gpu.replicas"], "2");
  EXPECT_EQ(l["nvidia.com/gpu.memory"], "4864");
  EXPECT_EQ(l["nvidia.com/gpu.slices.gi"], "1");
  EXPECT_EQ(l["nvidia.com/gpu.family"], "ampere");
  EXPECT_THAT(l, Not(Contains(Key("nvidia.com/mig-1g.5gb.count"))));
}

TEST(LabelsTest, SingleStrategyOnANodeItDoesNotFitIsInvalid) {
  device::Gpu mig = A100(0);
  mig.mig_enabled = true;
  mig.mig_devices = {Mig("1g.5gb", 1, 4864)};
  device::Gpu other = mig;
  other.index = 1;
  other.mig_devices = {Mig("2g.10gb", 2, 9984)};
  device::Gpu empty = A100(1);
  empty.mig_enabled = true;
  config::Config c;
  c.flags.mig_strategy = config::MigStrategy::kSingle;
  const std::vector<std::vector<device::Gpu>> nodes = {
      {mig, A100(1)}, {mig, other}, {mig, empty}};
  for (const auto& gpus : nodes) {
    Labels l = ComputeLabels(Node(gpus), c, {});
    EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-A100-SXM4-40GB-MIG-INVALID");
    EXPECT_EQ(l["nvidia.com/gpu.count"], "0");
    EXPECT_EQ(l["nvidia.com/gpu.replicas"], "0");
    EXPECT_EQ(l["nvidia.com/gpu.memory"], "0");
  }
  // No MIG-enabled GPU: as strategy none.
  Labels none = ComputeLabels(Node({A100(0)}), c, {});
  EXPECT_EQ(none["nvidia.com/gpu.product"], "NVIDIA-A100-SXM4-40GB");
  EXPECT_EQ(none["nvidia.com/mig.strategy"], "single");
}

TEST(LabelsTest, SeveralModelsLabelTheFirstWholeGpusModel) {
  device::Gpu t4 = A100(1);
  t4.name = "Tesla T4";
  t4.cc_major = 7;
  t4.cc_minor = 5;
  device::Gpu mig = A100(0);
  mig.mig_enabled = true;
  Labels l = ComputeLabels(Node({mig, t4, A100(2)}), config::Config{}, {});
  EXPECT_EQ(l["nvidia.com/gpu.product"], "Tesla-T4");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "1");
  EXPECT_EQ(l["nvidia.com/gpu.family"], "turing");
}

TEST(LabelsTest, ModeMachineAndClique) {
  device::Gpu g0 = A100(0);
  device::Gpu g1 = A100(1);
  g0.fabric = device::GpuFabric{"c-uuid", 7, "completed", "healthy", ""};
  g1.fabric = g0.fabric;
  NodeFacts facts;
  facts.pci_class = {{0, "0x030200"}, {1, "0x030200"}};
  facts.machine_type = "  ";
  Labels l = ComputeLabels(Node({g0, g1}), config::Config{}, facts);
  EXPECT_EQ(l["nvidia.com/gpu.mode"], "compute");
  EXPECT_EQ(l["nvidia.com/gpu.machine"], "unknown");
  EXPECT_EQ(l["nvidia.com/gpu.clique"], "c-uuid.7");

  facts.pci_class[1] = "0x030000";
  g1.fabric->clique_id = 8;
  l = ComputeLabels(Node({g0, g1}), config::Config{}, facts);
  EXPECT_EQ(l["nvidia.com/gpu.mode"], "unknown");
  EXPECT_THAT(l, Not(Contains(Key("nvidia.com/gpu.clique"))));

  facts.pci_class = {{0, "0x030000"}};
  g0.fabric->state = "in-progress";
  l = ComputeLabels(Node({g0}), config::Config{}, facts);
  EXPECT_EQ(l["nvidia.com/gpu.mode"], "graphics");
  EXPECT_THAT(l, Not(Contains(Key("nvidia.com/gpu.clique"))));
}

TEST(LabelsTest, VersionsNvidiaWouldNotPrintAreLeftOut) {
  device::Node node = Node({A100(0)});
  node.driver_version = "r550";
  node.cuda_driver_version = 0;
  Labels l = ComputeLabels(node, config::Config{}, {});
  EXPECT_THAT(l, Not(Contains(Key("nvidia.com/cuda.driver.major"))));
  EXPECT_THAT(l, Not(Contains(Key("nvidia.com/cuda.runtime.major"))));
  node.driver_version = "580.82";
  l = ComputeLabels(node, config::Config{}, {});
  EXPECT_EQ(l["nvidia.com/cuda.driver.minor"], "82");
  EXPECT_EQ(l["nvidia.com/cuda.driver.rev"], "");
}

TEST(LabelsTest, ArchFamilies) {
  const std::vector<std::tuple<int, int, std::string>> cases = {
      {3, 7, "kepler"},     {6, 0, "pascal"},     {7, 0, "volta"},
      {7, 5, "turing"},     {8, 6, "ampere"},     {8, 9, "ada-lovelace"},
      {9, 0, "hopper"},     {10, 0, "blackwell"}, {12, 0, "blackwell"},
      {13, 0, "rubin"},     {4, 0, "undefined"},  {11, 0, "undefined"},
      {14, 0, "undefined"},
  };
  for (const auto& [major, minor, family] : cases) {
    EXPECT_EQ(ArchFamily(major, minor), family) << major << "." << minor;
  }
}

TEST(LabelsTest, LabelValuesAreOnesTheApiServerAccepts) {
  EXPECT_EQ(LabelValue("NVIDIA H100 80GB HBM3"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(LabelValue("1g.10gb+me"), "1g.10gb.me");
  EXPECT_EQ(LabelValue("(Server) "), "Server");
  EXPECT_EQ(LabelValue(std::string(80, 'a')), std::string(63, 'a'));
  EXPECT_EQ(LabelValue(std::string(62, 'a') + "-b"), std::string(62, 'a'));
  EXPECT_EQ(LabelValue(""), "");
}

}  // namespace
}  // namespace gpulet::labels
