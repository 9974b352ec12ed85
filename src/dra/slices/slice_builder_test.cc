#include "src/dra/slices/slice_builder.h"

#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/dra/slices/device_json.h"
#include "src/dra/testing/sim_devices.h"
#include "src/net/kube/api_path.h"

namespace gpulet::draslice {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

device::Gpu Gpu(unsigned index) {
  device::Gpu gpu;
  gpu.index = index;
  gpu.minor = index;
  gpu.uuid = absl::StrCat("GPU-", index);
  gpu.name = "NVIDIA A100-SXM4-80GB";
  gpu.bus_id = absl::StrFormat("00000000:%02X:00.0", index % 256);
  gpu.memory_total_bytes = 80ull << 30;
  gpu.cc_major = 8;
  return gpu;
}

// A GPU in MIG mode with `count` 1g.10gb devices on slices 0.. count-1.
device::Gpu MigGpu(unsigned index, unsigned count) {
  device::Gpu gpu = Gpu(index);
  gpu.mig_enabled = true;
  for (unsigned k = 0; k < count; ++k) {
    device::MigDevice mig;
    mig.uuid = absl::StrCat("MIG-", index, "-", k);
    mig.parent_index = index;
    mig.mig_index = k;
    mig.gi_placement =
        device::GiPlacement{.profile_id = 19, .start = k, .size = 1};
    mig.profile = "1g.10gb";
    mig.memory_bytes = 9984ull << 20;
    gpu.mig_devices.push_back(mig);
  }
  return gpu;
}

NodeDevices Node(std::vector<device::Gpu> gpus) {
  NodeDevices in;
  in.node.driver_version = "550.54.15";
  in.node.cuda_driver_version = 12040;
  in.node.gpus = std::move(gpus);
  return in;
}

SliceOptions Options() { return {.node_name = "node-1"}; }

std::vector<std::string> DeviceNames(const std::vector<Json>& slices) {
  std::vector<std::string> names;
  for (const Json& slice : slices) {
    for (const Json& d : slice["spec"].value("devices", Json::array())) {
      names.push_back(d["name"]);
    }
  }
  return names;
}

std::vector<Json> Build(const NodeDevices& in, SliceOptions options = Options(),
                        int64_t generation = 3) {
  absl::StatusOr<std::vector<Json>> slices =
      BuildSlices(in, options, generation);
  EXPECT_TRUE(slices.ok()) << slices.status();
  return slices.ok() ? *slices : std::vector<Json>{};
}

TEST(BuildSlicesTest, OneSliceForASmallNode) {
  std::vector<Json> slices = Build(Node({Gpu(0), Gpu(1)}));
  ASSERT_EQ(slices.size(), 1u);
  const Json& s = slices[0];
  EXPECT_EQ(s["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(s["kind"], "ResourceSlice");
  EXPECT_EQ(s["metadata"]["name"], "node-1-gpu.nvidia.com-0");
  EXPECT_FALSE(s["metadata"].contains("ownerReferences"));
  EXPECT_EQ(s["spec"]["driver"], "gpu.nvidia.com");
  EXPECT_EQ(s["spec"]["nodeName"], "node-1");
  EXPECT_EQ(
      s["spec"]["pool"],
      Json({{"name", "node-1"}, {"generation", 3}, {"resourceSliceCount", 1}}));
  EXPECT_THAT(DeviceNames(slices), ::testing::ElementsAre("gpu-0", "gpu-1"));
}

TEST(BuildSlicesTest, OwnedByTheNodeWhenItsUidIsKnown) {
  SliceOptions options = Options();
  options.node_uid = "u-1";
  const Json owner =
      Build(Node({Gpu(0)}), options)[0]["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "Node");
  EXPECT_EQ(owner["name"], "node-1");
  EXPECT_EQ(owner["uid"], "u-1");
}

TEST(BuildSlicesTest, EmptyNodeStillPublishesTheEmptyPool) {
  std::vector<Json> slices = Build(Node({}));
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_TRUE(slices[0]["spec"]["devices"].empty());
}

TEST(BuildSlicesTest, UnhealthyDevicesAreLeftOut) {
  NodeDevices in = Node({Gpu(0), Gpu(1), Gpu(2), MigGpu(3, 2), MigGpu(4, 2)});
  in.unhealthy = {"gpu-1", "gpu-3-mig-19-1-1", "gpu-4"};
  in.node.gpus[2].failure = "GPU is lost";
  EXPECT_THAT(DeviceNames(Build(in)),
              ::testing::ElementsAre("gpu-0", "gpu-3-mig-19-0-1"));
}

TEST(BuildSlicesTest, UnhealthyDevicesAreTaintedWhenAsked) {
  NodeDevices in = Node({Gpu(0), Gpu(1)});
  in.unhealthy = {"gpu-1"};
  SliceOptions options = Options();
  options.taint_unhealthy = true;
  std::vector<Json> slices = Build(in, options);
  const Json& devices = slices[0]["spec"]["devices"];
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_FALSE(devices[0].contains("taints"));
  EXPECT_EQ(devices[1]["taints"],
            Json::parse(R"([{"key":"gpu.nvidia.com/unhealthy",
                             "effect":"NoSchedule"}])"));
}

// Each device's taints by name ("" for none): what the slices say about
// every device, published or not (an absent device maps to "absent").
std::map<std::string, std::string> TaintsByName(
    const std::vector<Json>& slices, const std::vector<std::string>& names) {
  std::map<std::string, std::string> out;
  for (const std::string& name : names) out[name] = "absent";
  for (const Json& slice : slices) {
    for (const Json& d : slice["spec"].value("devices", Json::array())) {
      std::string taints;
      for (const Json& t : d.value("taints", Json::array())) {
        absl::StrAppend(
            &taints, taints.empty() ? "" : ",", t["key"].get<std::string>(),
            t.contains("value") ? "=" + t["value"].get<std::string>()
                                : std::string(),
            ":", t["effect"].get<std::string>());
      }
      out[d["name"].get<std::string>()] = taints;
    }
  }
  return out;
}

// A node with one fault of each kind: an Xid on gpu-1, gpu-2 lost, a
// double-bit ECC error on gpu-3 (no Xid), an Xid on one MIG device of
// gpu-4, and gpu-5 (in MIG mode) lost as a whole.
NodeDevices SickNode() {
  NodeDevices in =
      Node({Gpu(0), Gpu(1), Gpu(2), Gpu(3), MigGpu(4, 2), MigGpu(5, 2)});
  in.unhealthy = {"gpu-1",           "gpu-2",
                  "gpu-3",           "gpu-4-mig-19-1-1",
                  "gpu-5",           "gpu-5-mig-19-0-1",
                  "gpu-5-mig-19-1-1"};
  in.faults = {{"gpu-1", {.xid = 48, .lost = false}},
               {"gpu-2", {.xid = 79, .lost = true}},
               {"gpu-3", {}},
               {"gpu-4-mig-19-1-1", {.xid = 94, .lost = false}},
               {"gpu-5", {.xid = 0, .lost = true}},
               {"gpu-5-mig-19-0-1", {.xid = 0, .lost = true}},
               {"gpu-5-mig-19-1-1", {.xid = 0, .lost = true}}};
  return in;
}

const std::vector<std::string> kSickNodeNames = {"gpu-0",
                                                 "gpu-1",
                                                 "gpu-2",
                                                 "gpu-3",
                                                 "gpu-4-mig-19-0-1",
                                                 "gpu-4-mig-19-1-1",
                                                 "gpu-5-mig-19-0-1",
                                                 "gpu-5-mig-19-1-1"};

TEST(BuildSlicesTest, DropModeLeavesEveryUnhealthyDeviceOut) {
  EXPECT_EQ(
      TaintsByName(Build(SickNode()), kSickNodeNames),
      (std::map<std::string, std::string>{{"gpu-0", ""},
                                          {"gpu-1", "absent"},
                                          {"gpu-2", "absent"},
                                          {"gpu-3", "absent"},
                                          {"gpu-4-mig-19-0-1", ""},
                                          {"gpu-4-mig-19-1-1", "absent"},
                                          {"gpu-5-mig-19-0-1", "absent"},
                                          {"gpu-5-mig-19-1-1", "absent"}}));
}

TEST(BuildSlicesTest, TaintModeTaintsEachDeviceByItsFault) {
  SliceOptions options = Options();
  options.taint_unhealthy = true;
  EXPECT_EQ(TaintsByName(Build(SickNode(), options), kSickNodeNames),
            (std::map<std::string, std::string>{
                {"gpu-0", ""},
                {"gpu-1", "gpu.nvidia.com/xid=48:NoSchedule"},
                {"gpu-2", "gpu.nvidia.com/unreachable:NoExecute"},
                {"gpu-3", "gpu.nvidia.com/unhealthy:NoSchedule"},
                {"gpu-4-mig-19-0-1", ""},
                {"gpu-4-mig-19-1-1", "gpu.nvidia.com/xid=94:NoSchedule"},
                {"gpu-5-mig-19-0-1", "gpu.nvidia.com/unreachable:NoExecute"},
                {"gpu-5-mig-19-1-1", "gpu.nvidia.com/unreachable:NoExecute"}}));
}

TEST(BuildSlicesTest, DevicesAreCountedByState) {
  SliceOptions options = Options();
  EXPECT_EQ(CountDevices(SickNode(), options),
            (DeviceCounts{.healthy = 2, .tainted = 0, .withheld = 6}));
  options.taint_unhealthy = true;
  EXPECT_EQ(CountDevices(SickNode(), options),
            (DeviceCounts{.healthy = 2, .tainted = 6, .withheld = 0}));
}

TEST(BuildSlicesTest, TaintEffectsAreConfigurable) {
  SliceOptions options = Options();
  options.taint_unhealthy = true;
  options.unhealthy_effect = config::TaintEffect::kNone;
  options.lost_effect = config::TaintEffect::kNoSchedule;
  const std::map<std::string, std::string> taints =
      TaintsByName(Build(SickNode(), options), kSickNodeNames);
  EXPECT_EQ(taints.at("gpu-1"), "gpu.nvidia.com/xid=48:None");
  EXPECT_EQ(taints.at("gpu-2"), "gpu.nvidia.com/unreachable:NoSchedule");
  EXPECT_EQ(taints.at("gpu-3"), "gpu.nvidia.com/unhealthy:None");
  EXPECT_EQ(taints.at("gpu-0"), "");
}

TEST(BuildSlicesTest, ARecoveredDeviceLosesItsTaint) {
  SliceOptions options = Options();
  options.taint_unhealthy = true;
  NodeDevices in = SickNode();
  in.unhealthy.erase("gpu-2");
  in.faults.erase("gpu-2");
  const std::map<std::string, std::string> taints =
      TaintsByName(Build(in, options), kSickNodeNames);
  EXPECT_EQ(taints.at("gpu-2"), "");
  EXPECT_EQ(taints.at("gpu-1"), "gpu.nvidia.com/xid=48:NoSchedule");
}

TEST(BuildSlicesTest, AMigDeviceTakesItsGpusFaultWhenItHasNone) {
  SliceOptions options = Options();
  options.taint_unhealthy = true;
  NodeDevices in = Node({MigGpu(0, 2)});
  in.unhealthy = {"gpu-0"};
  in.faults = {{"gpu-0", {.xid = 79, .lost = true}}};
  EXPECT_EQ(TaintsByName(Build(in, options),
                         {"gpu-0-mig-19-0-1", "gpu-0-mig-19-1-1"}),
            (std::map<std::string, std::string>{
                {"gpu-0-mig-19-0-1", "gpu.nvidia.com/unreachable:NoExecute"},
                {"gpu-0-mig-19-1-1", "gpu.nvidia.com/unreachable:NoExecute"}}));
}

TEST(BuildSlicesTest, MigGpusGetCounterSetsInASliceOfTheirOwn) {
  std::vector<Json> slices = Build(Node({Gpu(0), MigGpu(1, 7)}));
  ASSERT_EQ(slices.size(), 2u);
  const Json& counters = slices[0]["spec"];
  EXPECT_FALSE(counters.contains("devices"));
  ASSERT_EQ(counters["sharedCounters"].size(), 1u);
  const Json& set = counters["sharedCounters"][0];
  EXPECT_EQ(set["name"], "gpu-1-counters");
  EXPECT_EQ(set["counters"]["memory"], Json({{"value", "80Gi"}}));
  EXPECT_EQ(set["counters"]["memory-slice-6"], Json({{"value", "1"}}));
  EXPECT_EQ(set["counters"].size(), 8u);
  for (const Json& slice : slices) {
    EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 2);
  }
  const Json& devices = slices[1]["spec"]["devices"];
  ASSERT_EQ(devices.size(), 8u);
  EXPECT_FALSE(devices[0].contains("consumesCounters"));
  EXPECT_EQ(devices[3]["consumesCounters"], Json::parse(R"([{
      "counterSet": "gpu-1-counters",
      "counters": {"memory": {"value": "9984Mi"},
                   "memory-slice-2": {"value": "1"}}}])"));
}

TEST(BuildSlicesTest, MigWithoutCountersWhenNotPartitionable) {
  SliceOptions options = Options();
  options.partitionable_mig = false;
  std::vector<Json> slices = Build(Node({MigGpu(0, 2)}), options);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_FALSE(slices[0]["spec"]["devices"][0].contains("consumesCounters"));
}

TEST(BuildSlicesTest, MigDeviceWithoutPlacementIsLeftOut) {
  NodeDevices in = Node({MigGpu(0, 2)});
  in.node.gpus[0].mig_devices[1].gi_placement.reset();
  EXPECT_THAT(DeviceNames(Build(in)),
              ::testing::ElementsAre("gpu-0-mig-19-0-1"));
}

TEST(BuildSlicesTest, LargePoolsAreSplitWithinTheLimits) {
  std::vector<device::Gpu> gpus;
  for (unsigned i = 0; i < 300; ++i) gpus.push_back(Gpu(i));
  std::vector<Json> slices = Build(Node(gpus));
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0]["spec"]["devices"].size(), 128u);
  EXPECT_EQ(slices[2]["spec"]["devices"].size(), 44u);
  EXPECT_EQ(slices[2]["metadata"]["name"], "node-1-gpu.nvidia.com-2");

  NodeDevices tainted = Node(gpus);
  tainted.unhealthy = {"gpu-7"};
  SliceOptions options = Options();
  options.taint_unhealthy = true;
  slices = Build(tainted, options);
  ASSERT_EQ(slices.size(), 5u);
  EXPECT_EQ(slices[0]["spec"]["devices"].size(), 64u);

  std::vector<device::Gpu> migs;
  for (unsigned i = 0; i < 20; ++i) migs.push_back(MigGpu(i, 7));
  slices = Build(Node(migs));
  ASSERT_EQ(slices.size(), 3u + 3u);  // 8+8+4 counter sets; 140 devices
  EXPECT_EQ(slices[2]["spec"]["sharedCounters"].size(), 4u);
  EXPECT_EQ(slices[3]["spec"]["devices"].size(), 64u);
  EXPECT_EQ(slices[5]["spec"]["devices"].size(), 12u);
}

TEST(BuildSlicesTest, WholeGpusAreShareableByMemoryWhenAsked) {
  NodeDevices in = Node({Gpu(0), MigGpu(1, 2)});
  in.node.gpus[0].memory_total_bytes = (80ull << 30) + (300ull << 20);
  SliceOptions options = Options();
  options.memory_share_step = 1ull << 30;
  std::vector<Json> slices = Build(in, options);
  ASSERT_EQ(slices.size(), 2u);
  const Json& gpu = slices[1]["spec"]["devices"][0];
  ASSERT_EQ(gpu["name"], "gpu-0");
  EXPECT_EQ(gpu["allowMultipleAllocations"], true);
  // The value stays the GPU's; the policy goes to the last whole step, and
  // a claim that asks no amount takes all of it.
  EXPECT_EQ(gpu["capacity"]["memory"], Json::parse(R"({
      "value": "82220Mi",
      "requestPolicy": {"default": "80Gi",
                        "validRange": {"min": "1Gi", "max": "80Gi",
                                       "step": "1Gi"}}})"));
  // MIG devices are partitions already: not shareable.
  for (const Json& mig : slices[1]["spec"]["devices"]) {
    if (mig["name"] == "gpu-0") continue;
    EXPECT_FALSE(mig.contains("allowMultipleAllocations")) << mig["name"];
    EXPECT_FALSE(mig["capacity"]["memory"].contains("requestPolicy"));
  }
  // Not asked: published as before.
  const Json plain = Build(in)[1]["spec"]["devices"][0];
  EXPECT_FALSE(plain.contains("allowMultipleAllocations"));
  EXPECT_EQ(plain["capacity"]["memory"], Json({{"value", "82220Mi"}}));
}

TEST(BuildSlicesTest, MemoryShareStepsFollowTheOption) {
  NodeDevices in = Node({Gpu(0)});
  SliceOptions options = Options();
  options.memory_share_step = 512ull << 20;
  const Json memory =
      Build(in, options)[0]["spec"]["devices"][0]["capacity"]["memory"];
  EXPECT_EQ(memory["requestPolicy"]["validRange"]["step"], "512Mi");
  EXPECT_EQ(memory["requestPolicy"]["validRange"]["min"], "512Mi");
  // A GPU with less than two steps has nothing to share.
  in.node.gpus[0].memory_total_bytes = 1000ull << 20;
  options.memory_share_step = 1ull << 30;
  const Json small = Build(in, options)[0]["spec"]["devices"][0];
  EXPECT_FALSE(small.contains("allowMultipleAllocations"));
  options.memory_share_step = 0;
  EXPECT_THAT(BuildSlices(in, options, 0).status().message(),
              HasSubstr("memory share step"));
}

TEST(BuildSlicesTest, BadInputIsRefusedNamingIt) {
  EXPECT_THAT(
      BuildSlices(Node({}), {.node_name = "Node_1"}, 0).status().message(),
      HasSubstr("node name"));
  EXPECT_THAT(BuildSlices(Node({}), {.driver = "GPU", .node_name = "n"}, 0)
                  .status()
                  .message(),
              HasSubstr("driver GPU"));
  EXPECT_THAT(BuildSlices(Node({}), Options(), -1).status().message(),
              HasSubstr("generation -1"));
  EXPECT_THAT(
      BuildSlices(Node({Gpu(2), Gpu(2)}), Options(), 0).status().message(),
      HasSubstr("device gpu-2"));
}

TEST(SliceNameTest, LongNodeNamesStayValidAndDistinct) {
  const std::string a = std::string(250, 'a');
  const std::string b = std::string(249, 'a') + "b";
  const std::string na = SliceName(a, "gpu.nvidia.com", 0);
  EXPECT_LE(na.size(), 253u);
  EXPECT_NE(na, SliceName(b, "gpu.nvidia.com", 0));
  EXPECT_TRUE(kube::ValidateName("slice", na).ok()) << na;
  EXPECT_EQ(SliceName("n", "d", 7), "n-d-7");
}

// Invariants of the pool for random nodes: names unique DNS labels within
// the limits, every slice within the API's size limits, the pool fields the
// same on every slice, every healthy device published once.
TEST(BuildSlicesPropertyTest, RandomNodesKeepTheInvariants) {
  const std::regex dns_label("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  std::mt19937 rng(17);
  for (int round = 0; round < 100; ++round) {
    std::vector<device::Gpu> gpus;
    const unsigned n = rng() % 160;
    size_t expected = 0;
    NodeDevices in;
    for (unsigned i = 0; i < n; ++i) {
      const bool mig = rng() % 3 == 0;
      gpus.push_back(mig ? MigGpu(i, rng() % 8) : Gpu(i));
      const bool sick = rng() % 10 == 0;
      if (sick) in.unhealthy.insert(absl::StrCat("gpu-", i));
      if (!sick) expected += mig ? gpus.back().mig_devices.size() : 1;
    }
    in.node = Node(gpus).node;
    SliceOptions options = Options();
    options.partitionable_mig = rng() % 2 == 0;
    if (rng() % 2 == 0)
      options.memory_share_step = uint64_t{1} << (20 + rng() % 14);
    std::vector<Json> slices = Build(in, options, round);
    std::set<std::string> names, slice_names;
    for (const Json& slice : slices) {
      const Json& spec = slice["spec"];
      EXPECT_TRUE(slice_names.insert(slice["metadata"]["name"]).second);
      EXPECT_EQ(spec["pool"]["generation"], round);
      EXPECT_EQ(spec["pool"]["resourceSliceCount"], slices.size());
      EXPECT_NE(spec.contains("devices"), spec.contains("sharedCounters"));
      EXPECT_LE(spec.value("sharedCounters", Json::array()).size(),
                kMaxCounterSetsPerSlice);
      const Json devices = spec.value("devices", Json::array());
      EXPECT_LE(devices.size(), kMaxDevicesPerSlice);
      for (const Json& d : devices) {
        const std::string name = d["name"];
        EXPECT_TRUE(std::regex_match(name, dns_label)) << name;
        EXPECT_LE(name.size(), 63u);
        EXPECT_TRUE(names.insert(name).second) << name;
        EXPECT_LE(d["attributes"].size() + d["capacity"].size(),
                  kMaxAttributesAndCapacities);
        if (d.contains("consumesCounters")) {
          EXPECT_LE(devices.size(), kMaxAdvancedDevicesPerSlice);
        }
        // Only whole GPUs are shared, and only when asked.
        EXPECT_EQ(d.contains("allowMultipleAllocations"),
                  options.memory_share_step.has_value() &&
                      d["attributes"]["type"]["string"] == "gpu")
            << name;
      }
    }
    EXPECT_EQ(names.size(), expected) << "round " << round;
  }
}

class SimSlicesTest : public nvml::simtest::SimTest {
 protected:
  // The slices of `machine` and their size as JSON text.
  std::vector<Json> SlicesOf(const std::string& machine) {
    absl::StatusOr<NodeDevices> in = testing::SimNodeDevices(machine);
    EXPECT_TRUE(in.ok()) << in.status();
    if (!in.ok()) return {};
    std::vector<Json> slices = Build(*in, Options(), 0);
    size_t bytes = 0;
    for (const Json& slice : slices) bytes += slice.dump().size();
    RecordProperty("slices", static_cast<int>(slices.size()));
    RecordProperty("bytes", static_cast<int>(bytes));
    std::cout << machine << ": " << slices.size() << " slice(s), "
              << DeviceNames(slices).size() << " device(s), " << bytes
              << " bytes of JSON\n";
    return slices;
  }
};

TEST_F(SimSlicesTest, DgxH100) {
  std::vector<Json> slices = SlicesOf("dgx-h100");
  ASSERT_EQ(slices.size(), 1u);
  const Json& devices = slices[0]["spec"]["devices"];
  ASSERT_EQ(devices.size(), 8u);
  for (const Json& d : devices) {
    EXPECT_EQ(d["attributes"]["nvlinkDomain"], Json({{"int", 0}}));
    EXPECT_EQ(d["attributes"]["cudaComputeCapability"],
              Json({{"version", "9.0.0"}}));
    EXPECT_TRUE(d["attributes"].contains(kPcieRootAttribute));
  }
  // Named by index, but the minor is the driver's (dgx-h100.yaml): GPU 0
  // is /dev/nvidia2, GPU 5 /dev/nvidia8.
  const std::pair<const char*, int> want[] = {
      {"GPU-9605369a-4cef-521f-904b-cafb54df34d0", 2},
      {"GPU-9d391317-5af3-50b6-beff-a02793204443", 3},
      {"GPU-f0721ffb-e66f-52de-a86e-1c9b040c372a", 0},
      {"GPU-a247cf48-492c-51cb-8f9d-afdf8da01c25", 1},
      {"GPU-cccd02ab-8116-568f-884a-21353f0a0a66", 6},
      {"GPU-5e3a5380-1a96-5e70-ab29-387692334a60", 8},
      {"GPU-4e2715e4-ebc8-5c76-9654-d23b8fe77138", 4},
      {"GPU-a5b17024-e9e5-5422-b1c3-d471ebf556ac", 5}};
  for (int i = 0; i < 8; ++i) {
    const Json* found = nullptr;
    for (const Json& d : devices) {
      if (d["name"] == absl::StrCat("gpu-", i)) found = &d;
    }
    ASSERT_NE(found, nullptr) << "gpu-" << i;
    EXPECT_EQ((*found)["attributes"]["uuid"],
              Json({{"string", want[i].first}}));
    EXPECT_EQ((*found)["attributes"]["minor"], Json({{"int", want[i].second}}))
        << want[i].first;
  }
}

// a100-mig: a MIG device's parentMinor is its GPU's minor, not the index
// its name carries (GPU 0 has minor 2, GPU 1 minor 0, GPU 2 minor 4).
TEST_F(SimSlicesTest, A100MigParentMinors) {
  std::vector<Json> slices = SlicesOf("a100-mig");
  ASSERT_FALSE(slices.empty());
  const std::map<std::string, int> want = {
      {"GPU-81522b7c-0696-540e-9229-21505149f9a1", 2},
      {"GPU-d8c16c85-4ebf-5ad7-897d-da74759e0946", 0},
      {"GPU-b5693fc3-184f-5903-8408-1cf65f944e4d", 4}};
  size_t mig_devices = 0;
  for (const Json& slice : slices) {
    for (const Json& d : slice["spec"].value("devices", Json::array())) {
      const Json& a = d["attributes"];
      if (a["type"] != Json({{"string", "mig"}})) continue;
      ++mig_devices;
      const std::string parent = a["parentUUID"]["string"];
      ASSERT_TRUE(want.contains(parent)) << d["name"];
      EXPECT_EQ(a["parentMinor"], Json({{"int", want.at(parent)}}))
          << d["name"];
    }
  }
  EXPECT_EQ(mig_devices, 3u + 7u + 2u);
}

TEST_F(SimSlicesTest, A100MigNode) {
  std::vector<Json> slices = SlicesOf("a100-mig-single");
  ASSERT_FALSE(slices.empty());
  std::vector<std::string> names = DeviceNames(slices);
  EXPECT_THAT(names, ::testing::Contains(::testing::StartsWith("gpu-0-mig-")));
  for (const std::string& name : names) {
    ASSERT_TRUE(dra::ParseDeviceName(name).ok()) << name;
  }
}

}  // namespace
}  // namespace gpulet::draslice
