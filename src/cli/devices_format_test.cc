#include "src/cli/devices_format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace gpulet::cli {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

device::Node TwoGpus() {
  device::Node node;
  node.driver_version = "550.54.15";
  node.nvml_version = "12.550.54.15";
  node.cuda_driver_version = 12040;
  device::Gpu a;
  a.index = 0;
  a.uuid = "GPU-aaaa";
  a.name = "NVIDIA A100-SXM4-40GB";
  a.bus_id = "00000000:07:00.0";
  a.memory_total_bytes = 40960 * kMiB;
  a.numa_node = 0;
  a.cpu_affinity = {0, 1};
  a.pci_device_id = 0x20B010DE;
  a.cc_major = 8;
  a.mig_capable = true;
  a.mig_enabled = true;
  a.mig_devices.push_back(device::MigDevice{.uuid = "MIG-bbbb",
                                            .parent_index = 0,
                                            .mig_index = 1,
                                            .gpu_instance_id = 2,
                                            .compute_instance_id = 0,
                                            .profile = "3g.20gb",
                                            .memory_bytes = 19968 * kMiB,
                                            .gi_slice_count = 3,
                                            .ci_slice_count = 3,
                                            .multiprocessor_count = 42});
  device::Gpu t;
  t.index = 1;
  t.uuid = "GPU-cccc";
  t.name = "Tesla T4";
  t.bus_id = "00000000:3B:00.0";
  t.memory_total_bytes = 15360 * kMiB;
  node.gpus = {a, t};
  return node;
}

TEST(DevicesTableTest, HeaderGpuRowsAndIndentedMigRows) {
  EXPECT_EQ(
      FormatDevicesTable(TwoGpus()),
      "Driver Version: 550.54.15    NVML Version: 12.550.54.15    CUDA "
      "Version: 12.4\n"
      "INDEX  UUID      NAME                   MEMORY     BUS ID            "
      "NUMA  MIG\n"
      "0      GPU-aaaa  NVIDIA A100-SXM4-40GB  40960 MiB  00000000:07:00.0  "
      "0     Enabled\n"
      "  0:1  MIG-bbbb  MIG 3g.20gb            19968 MiB                    "
      "      GI 2 CI 0\n"
      "1      GPU-cccc  Tesla T4               15360 MiB  00000000:3B:00.0  "
      "N/A   N/A\n");
}

TEST(DevicesTableTest, NoGpusIsAnEmptyTable) {
  device::Node node;
  EXPECT_EQ(FormatDevicesTable(node),
            "Driver Version: N/A    NVML Version: N/A    CUDA Version: N/A\n"
            "INDEX  UUID  NAME  MEMORY  BUS ID  NUMA  MIG\n");
}

TEST(DevicesJsonTest, StableFieldNames) {
  auto doc = nlohmann::json::parse(FormatDevicesJson(TwoGpus()));
  EXPECT_EQ(doc["driverVersion"], "550.54.15");
  EXPECT_EQ(doc["cudaVersion"], "12.4");
  EXPECT_EQ(doc["cudaDriverVersion"], 12040);
  ASSERT_EQ(doc["gpus"].size(), 2u);
  const auto& gpu = doc["gpus"][0];
  EXPECT_EQ(gpu["uuid"], "GPU-aaaa");
  EXPECT_EQ(gpu["numaNode"], 0);
  EXPECT_EQ(gpu["memoryTotalBytes"], 40960 * kMiB);
  EXPECT_EQ(gpu["computeCapability"], "8.0");
  EXPECT_EQ(gpu["cpuAffinity"], "0-1");
  EXPECT_EQ(gpu["pciDeviceId"], "0x20B010DE");
  EXPECT_TRUE(gpu["migEnabled"]);
  ASSERT_EQ(gpu["migDevices"].size(), 1u);
  const auto& mig = gpu["migDevices"][0];
  EXPECT_EQ(mig["index"], "0:1");
  EXPECT_EQ(mig["profile"], "3g.20gb");
  EXPECT_EQ(mig["gpuInstanceId"], 2);
  EXPECT_EQ(mig["memoryBytes"], 19968 * kMiB);
  EXPECT_TRUE(doc["gpus"][1]["numaNode"].is_null());
  EXPECT_FALSE(doc["gpus"][1]["migCapable"]);
}

TEST(DevicesJsonTest, InvalidUtf8DoesNotThrow) {
  device::Node node = TwoGpus();
  node.gpus[0].name = "bad \xff name";
  EXPECT_THAT(FormatDevicesJson(node), testing::HasSubstr("bad"));
}

}  // namespace
}  // namespace gpulet::cli
