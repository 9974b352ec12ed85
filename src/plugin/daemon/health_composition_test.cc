#include "src/plugin/daemon/health_composition.h"

#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "src/model/sharing/unit_id.h"

namespace gpulet::daemon {
namespace {

// Two GPUs: index 0 is GPU-a, index 1 is GPU-b.
const std::map<int, std::string> kUuids = {{0, "GPU-a"}, {1, "GPU-b"}};

pluginapi::Device Dev(const std::string& id, int gpu, int gi = -1, int ci = -1,
                      int replica = -1, bool healthy = true) {
  pluginapi::Device d;
  d.id = id;
  d.gpu_index = gpu;
  d.gpu_instance_id = gi;
  d.compute_instance_id = ci;
  d.replica = replica;
  d.healthy = healthy;
  return d;
}

pluginapi::Device Unit(const std::string& uuid, int gpu, int64_t k) {
  return Dev(sharing::MemoryUnitId(uuid, k), gpu);
}

pluginapi::Device Passthrough(const std::string& address) {
  return Dev(address, -1);
}

struct Fault {
  std::string uuid;
  int gpu = 0;
  std::optional<unsigned> gi;
  std::optional<unsigned> ci;
};

struct Case {
  std::string name;
  ResourceRole role = ResourceRole::kGpus;
  std::vector<pluginapi::Device> devices;
  std::vector<Fault> faults;  // into the book
  bool mps_enabled = false;
  std::set<std::string> mps_up;
  std::set<std::string> mps_replicas;
  std::map<std::string, resources::PassthroughHealth> passthrough;
  std::set<std::string> want_unhealthy;
};

// gtest prints a parameter in a test's listing: its name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<pluginapi::Device> GpusWithReplicas() {
  return {Dev("GPU-a::0", 0, -1, -1, 0), Dev("GPU-a::1", 0, -1, -1, 1),
          Dev("GPU-b::0", 1, -1, -1, 0), Dev("GPU-b::1", 1, -1, -1, 1)};
}

std::vector<pluginapi::Device> MigDevices() {
  return {Dev("GPU-a", 0), Dev("MIG-b-1-0", 1, 1, 0), Dev("MIG-b-2-0", 1, 2, 0),
          Dev("MIG-b-2-0::0", 1, 2, 0, 0), Dev("MIG-b-2-0::1", 1, 2, 0, 1)};
}

std::vector<pluginapi::Device> MemoryUnits() {
  return {Unit("GPU-a", 0, 0), Unit("GPU-a", 0, 1), Unit("GPU-b", 1, 0),
          Unit("GPU-b", 1, 1)};
}

// GPUs, their replicas and MIG devices: the book alone.
std::vector<Case> GpuCases() {
  return {
      {.name = "HealthyNode", .devices = {Dev("GPU-a", 0), Dev("GPU-b", 1)}},
      {.name = "XidUnhealthyGpu",
       .devices = {Dev("GPU-a", 0), Dev("GPU-b", 1)},
       .faults = {{"GPU-b", 1}},
       .want_unhealthy = {"GPU-b"}},
      {.name = "ReplicasOfAnUnhealthyGpu",
       .devices = GpusWithReplicas(),
       .faults = {{"GPU-a", 0}},
       .want_unhealthy = {"GPU-a::0", "GPU-a::1"}},
      {.name = "MigDevicesOfAnUnhealthyParent",
       .devices = MigDevices(),
       .faults = {{"GPU-b", 1}},
       .want_unhealthy = {"MIG-b-1-0", "MIG-b-2-0", "MIG-b-2-0::0",
                          "MIG-b-2-0::1"}},
      {.name = "OneUnhealthyMigInstanceAndItsReplicas",
       .devices = MigDevices(),
       .faults = {{"GPU-b", 1, 2u, std::nullopt}},
       .want_unhealthy = {"MIG-b-2-0", "MIG-b-2-0::0", "MIG-b-2-0::1"}},
      {.name = "MigComputeInstanceOtherThanTheFaultStaysHealthy",
       .devices = MigDevices(),
       .faults = {{"GPU-b", 1, 2u, 7u}}},
      {.name = "FaultOfAGpuNotOnTheNodeChangesNothing",
       .devices = {Dev("GPU-a", 0), Dev("GPU-b", 1)},
       .faults = {{"GPU-z", 9}}},
      {.name = "BaseUnhealthyStaysUnhealthy",
       .devices = {Dev("GPU-a", 0, -1, -1, -1, false), Dev("GPU-b", 1)},
       .want_unhealthy = {"GPU-a"}},
  };
}

// Memory units (the book, then MPS) and passthrough devices.
std::vector<Case> SharingAndPassthroughCases() {
  const std::string a0 = sharing::MemoryUnitId("GPU-a", 0);
  const std::string a1 = sharing::MemoryUnitId("GPU-a", 1);
  const std::string b0 = sharing::MemoryUnitId("GPU-b", 0);
  const std::string b1 = sharing::MemoryUnitId("GPU-b", 1);
  const resources::PassthroughHealth not_viable{false, "group not viable"};
  const resources::PassthroughHealth viable{true, ""};
  return {
      {.name = "MpsDaemonDownForAGpuSharingMemory",
       .role = ResourceRole::kMemoryUnits,
       .devices = MemoryUnits(),
       .mps_enabled = true,
       .mps_up = {"GPU-a"},
       .want_unhealthy = {b0, b1}},
      {.name = "MpsDaemonsAllUp",
       .role = ResourceRole::kMemoryUnits,
       .devices = MemoryUnits(),
       .mps_enabled = true,
       .mps_up = {"GPU-a", "GPU-b"}},
      {.name = "MpsOffUnitsFollowTheBookOnly",
       .role = ResourceRole::kMemoryUnits,
       .devices = MemoryUnits(),
       .faults = {{"GPU-a", 0}},
       .want_unhealthy = {a0, a1}},
      {.name = "XidUnhealthyGpuWithItsDaemonUp",
       .role = ResourceRole::kMemoryUnits,
       .devices = MemoryUnits(),
       .faults = {{"GPU-a", 0}},
       .mps_enabled = true,
       .mps_up = {"GPU-a", "GPU-b"},
       .want_unhealthy = {a0, a1}},
      {.name = "MpsDoesNotApplyToGpus",
       .devices = {Dev("GPU-a", 0), Dev("GPU-b", 1)},
       .mps_enabled = true},
      {.name = "SharingMpsReplicasOfAGpuWhoseDaemonIsDown",
       .devices = GpusWithReplicas(),
       .mps_up = {"GPU-b"},
       .mps_replicas = {"GPU-a", "GPU-b"},
       .want_unhealthy = {"GPU-a::0", "GPU-a::1"}},
      {.name = "SharingMpsDaemonsUpXidStillCounts",
       .devices = GpusWithReplicas(),
       .faults = {{"GPU-b", 1}},
       .mps_up = {"GPU-a", "GPU-b"},
       .mps_replicas = {"GPU-a", "GPU-b"},
       .want_unhealthy = {"GPU-b::0", "GPU-b::1"}},
      {.name = "ReplicasOfAGpuWithoutADaemonDoNotFollowOne",
       .devices = GpusWithReplicas(),
       .mps_replicas = {"GPU-a"},
       .want_unhealthy = {"GPU-a::0", "GPU-a::1"}},
      {.name = "MemorySharesMpsDoesNotTouchReplicas",
       .devices = GpusWithReplicas(),
       .mps_enabled = true},
      {.name = "PassthroughGroupNotViable",
       .role = ResourceRole::kPassthrough,
       .devices = {Passthrough("0000:3b:00.0"), Passthrough("0000:86:00.0")},
       .passthrough = {{"0000:3b:00.0", not_viable}, {"0000:86:00.0", viable}},
       .want_unhealthy = {"0000:3b:00.0"}},
      {.name = "PassthroughHealthDoesNotApplyToGpus",
       .devices = {Dev("0000:3b:00.0", 0)},
       .passthrough = {{"0000:3b:00.0", not_viable}}},
  };
}

std::vector<Case> Cases() {
  std::vector<Case> cases = GpuCases();
  for (Case& c : SharingAndPassthroughCases()) cases.push_back(std::move(c));
  return cases;
}

class ComposeDeviceHealthTest : public testing::TestWithParam<Case> {};

TEST_P(ComposeDeviceHealthTest, MarksExactlyTheExpectedDevicesUnhealthy) {
  const Case& c = GetParam();
  HealthBook book;
  for (const Fault& f : c.faults) {
    health::HealthEvent e;
    e.gpu_index = f.gpu;
    e.gpu_instance_id = f.gi;
    e.compute_instance_id = f.ci;
    e.reason = "Xid 79";
    book.Record(f.uuid, e);
  }
  const HealthSources sources{.gpu_uuids = kUuids,
                              .book = book,
                              .mps_enabled = c.mps_enabled,
                              .mps_up = c.mps_up,
                              .mps_replicas = c.mps_replicas,
                              .passthrough = c.passthrough};
  const std::vector<pluginapi::Device> out =
      ComposeDeviceHealth(c.devices, c.role, sources);
  ASSERT_EQ(out.size(), c.devices.size());
  std::set<std::string> unhealthy;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].id, c.devices[i].id);  // same devices, same order
    if (!out[i].healthy) unhealthy.insert(out[i].id);
  }
  EXPECT_EQ(unhealthy, c.want_unhealthy);
}

INSTANTIATE_TEST_SUITE_P(Table, ComposeDeviceHealthTest,
                         testing::ValuesIn(Cases()),
                         [](const testing::TestParamInfo<Case>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace gpulet::daemon
