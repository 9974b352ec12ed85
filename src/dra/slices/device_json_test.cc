#include "src/dra/slices/device_json.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::draslice {
namespace {

using Json = nlohmann::json;

TEST(BinaryQuantityTest, PrintsWhatTheApiServerPrintsBack) {
  EXPECT_EQ(BinaryQuantity(0), "0");
  EXPECT_EQ(BinaryQuantity(14), "14");
  EXPECT_EQ(BinaryQuantity(1000), "1k");
  EXPECT_EQ(BinaryQuantity(1024), "1Ki");
  EXPECT_EQ(BinaryQuantity(80ull << 30), "80Gi");
  EXPECT_EQ(BinaryQuantity(9984ull << 20), "9984Mi");
  EXPECT_EQ(BinaryQuantity(1000ull * 1024), "1000Ki");
  EXPECT_EQ(BinaryQuantity(85899345921ull), "85899345921");
  EXPECT_EQ(BinaryQuantity(3ull << 60), "3Ei");
}

TEST(SemverOfTest, NumericPartsAsSemver) {
  EXPECT_EQ(SemverOf("550.54.15"), "550.54.15");
  EXPECT_EQ(SemverOf("535.104.05"), "535.104.5");
  EXPECT_EQ(SemverOf("12.4"), "12.4.0");
  EXPECT_EQ(SemverOf("9"), "9.0.0");
  EXPECT_EQ(SemverOf(""), std::nullopt);
  EXPECT_EQ(SemverOf("1.2.3.4"), std::nullopt);
  EXPECT_EQ(SemverOf("12.x"), std::nullopt);
  EXPECT_EQ(SemverOf("-1.0"), std::nullopt);
  EXPECT_EQ(SemverOf("1..2"), std::nullopt);
}

TEST(StandardBusIdTest, SysfsSpelling) {
  EXPECT_EQ(StandardBusId("00000000:1A:00.0"), "0000:1a:00.0");
  EXPECT_EQ(StandardBusId("0000:1a:00.0"), "0000:1a:00.0");
  EXPECT_EQ(StandardBusId("garbage"), "");
}

device::Gpu H100() {
  device::Gpu gpu;
  gpu.index = 3;
  gpu.minor = 5;
  gpu.uuid = "GPU-1";
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.bus_id = "00000000:18:00.0";
  gpu.memory_total_bytes = 80ull << 30;
  gpu.numa_node = 1;
  gpu.cc_major = 9;
  gpu.brand = "Nvidia";
  gpu.architecture = "Hopper";
  return gpu;
}

TEST(GpuDeviceJsonTest, AttributesAndMemory) {
  const Json d = GpuDeviceJson(H100(), {.driver_version = "550.54.15",
                                        .cuda_driver_version = 12040,
                                        .nvlink_domain = 0,
                                        .pcie_root = "pci0000:00"});
  EXPECT_EQ(d["name"], "gpu-3");
  const Json& a = d["attributes"];
  EXPECT_EQ(a["type"], Json({{"string", "gpu"}}));
  EXPECT_EQ(a["uuid"], Json({{"string", "GPU-1"}}));
  EXPECT_EQ(a["productName"], Json({{"string", "NVIDIA H100 80GB HBM3"}}));
  EXPECT_EQ(a["brand"], Json({{"string", "Nvidia"}}));
  EXPECT_EQ(a["architecture"], Json({{"string", "Hopper"}}));
  EXPECT_EQ(a["cudaComputeCapability"], Json({{"version", "9.0.0"}}));
  EXPECT_EQ(a["driverVersion"], Json({{"version", "550.54.15"}}));
  EXPECT_EQ(a["cudaDriverVersion"], Json({{"version", "12.4.0"}}));
  EXPECT_EQ(a["index"], Json({{"int", 3}}));
  EXPECT_EQ(a["minor"], Json({{"int", 5}}));
  EXPECT_EQ(a[kPciBusIdAttribute], Json({{"string", "0000:18:00.0"}}));
  EXPECT_EQ(a[kPcieRootAttribute], Json({{"string", "pci0000:00"}}));
  EXPECT_EQ(a["numaNode"], Json({{"int", 1}}));
  EXPECT_EQ(a["nvlinkDomain"], Json({{"int", 0}}));
  EXPECT_FALSE(a.contains("nvlinkClique"));
  EXPECT_EQ(d["capacity"], Json({{"memory", {{"value", "80Gi"}}}}));
}

TEST(GpuDeviceJsonTest, UnknownFactsAreLeftOutAndCliqueIsPublished) {
  device::Gpu gpu = H100();
  gpu.numa_node.reset();
  gpu.name = std::string(100, 'x');
  gpu.fabric = device::GpuFabric{
      .cluster_uuid = "c1", .clique_id = 7, .state = "completed"};
  const Json a = GpuDeviceJson(gpu, {.driver_version = "n/a"})["attributes"];
  EXPECT_FALSE(a.contains("numaNode"));
  EXPECT_FALSE(a.contains("nvlinkDomain"));
  EXPECT_FALSE(a.contains(kPcieRootAttribute));
  EXPECT_FALSE(a.contains("driverVersion"));
  EXPECT_FALSE(a.contains("cudaDriverVersion"));
  EXPECT_EQ(a["productName"]["string"].get<std::string>().size(), 64u);
  EXPECT_EQ(a["nvlinkClique"], Json({{"string", "c1.7"}}));
}

TEST(MigDeviceJsonTest, NameAttributesAndCapacities) {
  device::Gpu parent = H100();
  device::MigDevice mig;
  mig.uuid = "MIG-1";
  mig.mig_index = 2;
  mig.gi_placement =
      device::GiPlacement{.profile_id = 19, .start = 6, .size = 1};
  mig.profile = "1g.10gb";
  mig.memory_bytes = 9984ull << 20;
  mig.multiprocessor_count = 16;
  mig.copy_engine_count = 1;
  mig.jpeg_count = 1;
  const Json d = MigDeviceJson(parent, mig, {.driver_version = "550.54.15"});
  EXPECT_EQ(d["name"], "gpu-3-mig-19-6-1");
  const Json& a = d["attributes"];
  EXPECT_EQ(a["type"], Json({{"string", "mig"}}));
  EXPECT_EQ(a["uuid"], Json({{"string", "MIG-1"}}));
  EXPECT_EQ(a["parentUUID"], Json({{"string", "GPU-1"}}));
  EXPECT_EQ(a["parentIndex"], Json({{"int", 3}}));
  EXPECT_EQ(a["profile"], Json({{"string", "1g.10gb"}}));
  EXPECT_EQ(a["placementStart"], Json({{"int", 6}}));
  EXPECT_EQ(a[kPciBusIdAttribute], Json({{"string", "0000:18:00.0"}}));
  EXPECT_EQ(d["capacity"]["memory"], Json({{"value", "9984Mi"}}));
  EXPECT_EQ(d["capacity"]["multiprocessors"], Json({{"value", "16"}}));
  EXPECT_EQ(d["capacity"]["decoders"], Json({{"value", "0"}}));
}

}  // namespace
}  // namespace gpulet::draslice
