#include "src/model/allocation/simple_preferred.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpulet::allocation {

using pluginapi::Device;
using pluginapi::DeviceSnapshot;
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// Eight GPUs, IDs g0..g7 by index, 0-3 on NUMA node 0 and 4-7 on node 1;
// "x" sorts first by ID but is GPU 9 with no NUMA node; r0/r1 are replicas
// of GPU 8 spanning both nodes.
DeviceSnapshot Machine() {
  DeviceSnapshot s;
  s.version = 1;
  for (int i = 0; i < 8; ++i) {
    std::string id = "g" + std::to_string(i);
    s.devices.push_back({id, true, {i < 4 ? 0 : 1}, id, i});
  }
  s.devices.push_back({"x", true, {}, "x", 9});
  s.devices.push_back({"r0", true, {0, 1}, "g8", 8});
  s.devices.push_back({"r1", true, {0, 1}, "g8", 8});
  s.devices.push_back({"u", true, {}, "u", -1});
  return s;
}

DeviceSnapshot WithUnhealthy(std::vector<std::string> ids) {
  DeviceSnapshot s = Machine();
  for (Device& d : s.devices) {
    for (const std::string& id : ids) {
      if (d.id == id) d.healthy = false;
    }
  }
  return s;
}

struct PreferredCase {
  std::string name;
  DeviceSnapshot snapshot;
  std::vector<std::string> available;
  std::vector<std::string> must;
  int size;
  std::vector<std::string> want;
};

class SimplePreferredTest : public ::testing::TestWithParam<PreferredCase> {};

TEST_P(SimplePreferredTest, Chooses) {
  const PreferredCase& c = GetParam();
  absl::StatusOr<std::vector<std::string>> got =
      SimplePreferred(c.snapshot, c.available, c.must, c.size);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAreArray(c.want));
}

INSTANTIATE_TEST_SUITE_P(
    Table, SimplePreferredTest,
    ::testing::Values(
        PreferredCase{"fullest_numa_node_first",
                      Machine(),
                      {"g0", "g1", "g4", "g5", "g6"},
                      {},
                      2,
                      {"g4", "g5"}},
        PreferredCase{"numa_tie_goes_to_lowest_node",
                      Machine(),
                      {"g6", "g5", "g2", "g1"},
                      {},
                      2,
                      {"g1", "g2"}},
        PreferredCase{"must_include_first_then_its_node",
                      Machine(),
                      {"g0", "g1", "g2", "g5", "g7"},
                      {"g5"},
                      3,
                      {"g5", "g7", "g0"}},
        PreferredCase{"must_include_order_kept",
                      Machine(),
                      {"g0", "g1", "g2", "g3"},
                      {"g3", "g1"},
                      3,
                      {"g3", "g1", "g0"}},
        PreferredCase{"must_include_fills_the_request",
                      Machine(),
                      {"g0", "g1", "g5"},
                      {"g5", "g1"},
                      2,
                      {"g5", "g1"}},
        PreferredCase{"everything",
                      Machine(),
                      {"g2", "g1", "g0"},
                      {},
                      3,
                      {"g0", "g1", "g2"}},
        PreferredCase{"healthy_before_numa",
                      WithUnhealthy({"g4"}),
                      {"g4", "g5", "g0", "g6"},
                      {"g6"},
                      3,
                      {"g6", "g5", "g0"}},
        PreferredCase{"unhealthy_only_when_needed",
                      WithUnhealthy({"g0"}),
                      {"g0", "g1"},
                      {},
                      2,
                      {"g1", "g0"}},
        PreferredCase{"gpu_index_before_id_and_unknown_index_last",
                      Machine(),
                      {"u", "x", "g3"},
                      {},
                      3,
                      {"g3", "x", "u"}},
        PreferredCase{"multi_numa_device_matches_both",
                      Machine(),
                      {"g0", "g7", "r1", "r0"},
                      {"g7"},
                      3,
                      {"g7", "r0", "r1"}},
        PreferredCase{"must_include_without_numa_uses_fullest",
                      Machine(),
                      {"x", "g0", "g5", "g6"},
                      {"x"},
                      2,
                      {"x", "g5"}},
        PreferredCase{"no_numa_anywhere", Machine(), {"u", "x"}, {}, 1, {"x"}},
        PreferredCase{"duplicates_count_once",
                      Machine(),
                      {"g1", "g1", "g0", "g0"},
                      {"g1", "g1"},
                      2,
                      {"g1", "g0"}}),
    [](const auto& test_info) { return test_info.param.name; });

struct ImpossibleCase {
  std::string name;
  std::vector<std::string> available;
  std::vector<std::string> must;
  int size;
  std::string want_in_message;
};

class SimplePreferredErrorTest
    : public ::testing::TestWithParam<ImpossibleCase> {};

TEST_P(SimplePreferredErrorTest, IsInvalidArgumentNamingTheCause) {
  const ImpossibleCase& c = GetParam();
  absl::StatusOr<std::vector<std::string>> got =
      SimplePreferred(Machine(), c.available, c.must, c.size);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr(c.want_in_message));
}

INSTANTIATE_TEST_SUITE_P(
    Table, SimplePreferredErrorTest,
    ::testing::Values(
        ImpossibleCase{"size_zero", {"g0"}, {}, 0, "allocation_size"},
        ImpossibleCase{"size_negative", {"g0"}, {}, -3, "got -3"},
        ImpossibleCase{"more_than_available",
                       {"g0", "g1"},
                       {},
                       3,
                       "allocation_size 3 exceeds the 2 available"},
        ImpossibleCase{"duplicates_do_not_make_more",
                       {"g0", "g0"},
                       {},
                       2,
                       "exceeds the 1 available"},
        ImpossibleCase{"nothing_available", {}, {}, 1, "exceeds the 0"},
        ImpossibleCase{"unknown_available",
                       {"g0", "GPU-nope"},
                       {},
                       1,
                       "unknown device: GPU-nope"},
        ImpossibleCase{"must_not_available",
                       {"g0", "g1"},
                       {"g2"},
                       2,
                       "must_include_deviceIDs entry g2"},
        ImpossibleCase{"must_unknown",
                       {"g0"},
                       {"zz"},
                       1,
                       "zz is not in available_deviceIDs (unknown device)"},
        ImpossibleCase{"must_more_than_size",
                       {"g0", "g1", "g2"},
                       {"g0", "g1"},
                       1,
                       "more than allocation_size 1"}),
    [](const auto& test_info) { return test_info.param.name; });

}  // namespace
}  // namespace gpulet::allocation
