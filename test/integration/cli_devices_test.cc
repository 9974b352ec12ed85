// `gpulet devices` and `gpulet topo` against every built-in simulator
// profile, loaded through the production dlopen path. Each profile's own
// model (sim::LoadMachine) is the reference for what NVML reports; facts a
// user would check by eye (names, NV18, SYS across islands) are also written
// out literally so a wrong model cannot hide a wrong gpulet.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sim/profiles.h"
#include "test/integration/gpulet_runner.h"

namespace gpulet::testing {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::vector<std::string> ProfilesWithDriver() {
  std::vector<std::string> names = sim::ProfileNames();
  names.erase(std::remove(names.begin(), names.end(), "no-driver"),
              names.end());
  return names;
}

sim::Machine LoadProfile(const std::string& name) {
  absl::StatusOr<sim::Machine> machine = sim::LoadMachine(name);
  EXPECT_TRUE(machine.ok()) << machine.status();
  return machine.ok() ? *machine : sim::Machine{};
}

// NVIDIA's name for a MIG device of `gpu` in the model.
std::string ExpectedProfile(const sim::Gpu& gpu, const sim::MigDevice& mig) {
  std::string gi_name;
  unsigned gi_slices = 0;
  for (const auto& p : gpu.gi_profiles) {
    if (p.id == mig.gpu_instance_profile_id) {
      gi_name = p.name;
      gi_slices = p.slice_count;
    }
  }
  for (const auto& p : gpu.ci_profiles) {
    if (p.id == mig.compute_instance_profile_id && p.slice_count != gi_slices) {
      return absl::StrCat(p.slice_count, "c.", gi_name);
    }
  }
  return gi_name;
}

uint64_t ExpectedMigMemory(const sim::Gpu& gpu, const sim::MigDevice& mig) {
  for (const auto& p : gpu.gi_profiles) {
    if (p.id == mig.gpu_instance_profile_id) return p.memory_size_mb * kMiB;
  }
  return 0;
}

// "0-2,5" -> {0, 1, 2, 5}; "N/A" -> {}.
std::vector<unsigned> ParseCpuList(const std::string& text) {
  std::vector<unsigned> cpus;
  if (text == "N/A") return cpus;
  for (absl::string_view range : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> ends = absl::StrSplit(range, '-');
    unsigned first = 0;
    unsigned last = 0;
    EXPECT_TRUE(absl::SimpleAtoi(ends.front(), &first)) << text;
    EXPECT_TRUE(absl::SimpleAtoi(ends.back(), &last)) << text;
    for (unsigned cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

class ProfileTest : public ::testing::TestWithParam<std::string> {};

void CheckMigDevices(const sim::Gpu& want, const json& got, size_t index) {
  ASSERT_EQ(got["migDevices"].size(), want.mig_devices.size());
  for (size_t m = 0; m < want.mig_devices.size(); ++m) {
    const sim::MigDevice& mig = want.mig_devices[m];
    const json& g = got["migDevices"][m];
    SCOPED_TRACE(mig.uuid);
    EXPECT_EQ(g["uuid"], mig.uuid);
    EXPECT_EQ(g["parentIndex"], index);
    EXPECT_EQ(g["gpuInstanceId"], mig.gpu_instance_id);
    EXPECT_EQ(g["computeInstanceId"], mig.compute_instance_id);
    EXPECT_EQ(g["profile"], ExpectedProfile(want, mig));
    EXPECT_EQ(g["memoryBytes"], ExpectedMigMemory(want, mig));
    EXPECT_EQ(g["index"], absl::StrCat(index, ":", g["migIndex"].get<int>()));
  }
}

TEST_P(ProfileTest, DevicesJsonMatchesTheMachineModel) {
  const sim::Machine machine = LoadProfile(GetParam());
  ProcessResult r = RunGpulet(GetParam(), {"devices", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.err, "");
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["driverVersion"], machine.driver_version);
  EXPECT_EQ(doc["nvmlVersion"], machine.nvml_version);
  EXPECT_EQ(doc["cudaDriverVersion"], machine.cuda_driver_version);
  ASSERT_EQ(doc["gpus"].size(), machine.gpus.size());
  for (size_t i = 0; i < machine.gpus.size(); ++i) {
    const sim::Gpu& want = machine.gpus[i];
    const json& got = doc["gpus"][i];
    SCOPED_TRACE(want.uuid);
    EXPECT_EQ(got["index"], i);
    EXPECT_EQ(got["uuid"], want.uuid);
    EXPECT_EQ(got["name"], want.name);
    EXPECT_EQ(got["serial"], want.serial);
    EXPECT_EQ(got["minor"], want.minor);
    EXPECT_EQ(got["busId"], want.bus_id);
    EXPECT_EQ(got["memoryTotalBytes"], want.memory_total);
    EXPECT_EQ(got["numaNode"],
              want.numa_node < 0 ? json(nullptr) : json(want.numa_node));
    EXPECT_EQ(ParseCpuList(got["cpuAffinity"]), want.cpu_affinity);
    EXPECT_EQ(got["pciDeviceId"],
              absl::StrFormat("0x%08X", want.pci_device_id));
    EXPECT_EQ(got["computeCapability"],
              absl::StrCat(want.cc_major, ".", want.cc_minor));
    EXPECT_EQ(got["migCapable"], want.mig_capable);
    EXPECT_EQ(got["migEnabled"], want.mig_enabled);
    if (want.architecture != NVML_DEVICE_ARCH_UNKNOWN) {
      EXPECT_NE(got["architecture"], "Unknown");
    }
    if (want.fabric) {
      EXPECT_EQ(got["fabric"]["cliqueId"], want.fabric->clique_id);
      EXPECT_EQ(got["fabric"]["state"], "completed");
      EXPECT_EQ(got["fabric"]["clusterUuid"].get<std::string>().size(), 36u);
    } else {
      EXPECT_TRUE(got["fabric"].is_null());
    }
    CheckMigDevices(want, got, i);
  }
}

TEST_P(ProfileTest, DevicesTableListsEveryGpuAndMigDevice) {
  const sim::Machine machine = LoadProfile(GetParam());
  ProcessResult r = RunGpulet(GetParam(), {"devices"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("Driver Version: " + machine.driver_version));
  EXPECT_THAT(r.out, HasSubstr("INDEX  UUID"));
  for (size_t i = 0; i < machine.gpus.size(); ++i) {
    const sim::Gpu& gpu = machine.gpus[i];
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat("\n", i, " ")));
    EXPECT_THAT(r.out, HasSubstr(gpu.uuid));
    EXPECT_THAT(r.out, HasSubstr(gpu.name));
    for (const auto& mig : gpu.mig_devices) {
      EXPECT_THAT(r.out, HasSubstr(mig.uuid));
      EXPECT_THAT(r.out, HasSubstr("MIG " + ExpectedProfile(gpu, mig)));
      EXPECT_THAT(r.out, HasSubstr(absl::StrCat("\n  ", i, ":")));
    }
  }
  // Header line + column header + one line per GPU and MIG device.
  size_t rows = 2;
  for (const auto& gpu : machine.gpus) rows += 1 + gpu.mig_devices.size();
  EXPECT_EQ(static_cast<size_t>(std::count(r.out.begin(), r.out.end(), '\n')),
            rows)
      << r.out;
}

TEST_P(ProfileTest, TopoMatchesTheMachineModel) {
  const sim::Machine machine = LoadProfile(GetParam());
  ProcessResult r = RunGpulet(GetParam(), {"topo", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const json doc = json::parse(r.out);
  const size_t n = machine.gpus.size();
  ASSERT_EQ(doc["matrix"].size(), n);
  ASSERT_EQ(doc["pairs"].size(), n * (n > 0 ? n - 1 : 0));
  for (const json& pair : doc["pairs"]) {
    const size_t a = pair["gpu1"];
    const size_t b = pair["gpu2"];
    const char* levels[] = {"X", "PIX", "PXB", "PHB", "NODE", "SYS"};
    EXPECT_EQ(pair["level"], levels[machine.topology[a][b] / 10])
        << a << "," << b;
  }
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(doc["matrix"][i][i], "X");
    EXPECT_EQ(doc["gpus"][i]["numaNode"],
              machine.gpus[i].numa_node < 0 ? json(nullptr)
                                            : json(machine.gpus[i].numa_node));
  }
}

TEST_P(ProfileTest, TopoTableHasAffinityColumnsAndLegend) {
  ProcessResult r = RunGpulet(GetParam(), {"topo"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("CPU Affinity"));
  EXPECT_THAT(r.out, HasSubstr("NUMA Affinity"));
  EXPECT_THAT(r.out, HasSubstr("Legend:"));
}

INSTANTIATE_TEST_SUITE_P(
    Builtin, ProfileTest, ::testing::ValuesIn(ProfilesWithDriver()),
    [](const ::testing::TestParamInfo<std::string>& param_info) {
      std::string name = param_info.param;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

// Written out from sim/profiles/a100-mig.yaml: the driver's minors are not
// NVML's indexes (and minor 3 is unused).
TEST(DevicesMinorTest, MinorsAreTheDriversNotTheIndexes) {
  ProcessResult r = RunGpulet("a100-mig", {"devices", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const json doc = json::parse(r.out);
  const std::pair<const char*, int> want[] = {
      {"GPU-81522b7c-0696-540e-9229-21505149f9a1", 2},
      {"GPU-d8c16c85-4ebf-5ad7-897d-da74759e0946", 0},
      {"GPU-b5693fc3-184f-5903-8408-1cf65f944e4d", 4},
      {"GPU-7686041d-dbe9-5c49-b4fb-b61b57525544", 1}};
  ASSERT_EQ(doc["gpus"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(doc["gpus"][i]["index"], i);
    EXPECT_EQ(doc["gpus"][i]["uuid"], want[i].first);
    EXPECT_EQ(doc["gpus"][i]["minor"], want[i].second) << want[i].first;
  }
}

TEST(ProfileListTest, EveryBriefedProfileIsBuiltIn) {
  EXPECT_THAT(sim::ProfileNames(),
              ::testing::IsSupersetOf(
                  {"dgx-a100", "dgx-h100", "pcie-t4", "islands-16", "a100-mig",
                   "a100-mig-single", "none", "no-driver", "hgx-h200",
                   "dgx-b200", "gb200-nvl", "b200-mig", "rtx-pro-6000-mig"}));
}

}  // namespace
}  // namespace gpulet::testing
