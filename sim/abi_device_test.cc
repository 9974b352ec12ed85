// ABI tests: device enumeration, identity and the argument checks every
// device call shares.
#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/testing/abi_test_util.h"

namespace gpulet::sim::testing {
namespace {

using AbiDeviceTest = SimTest;

// One GPU without NUMA node, CPU affinity or serial-less defaults, and only
// Xid events: the NOT_SUPPORTED corners.
constexpr char kBareGpu[] =
    "gpus:\n"
    "  - uuid: GPU-00000000-0000-4000-8000-000000000000\n"
    "    busId: \"0000:07:00.0\"\n"
    "    name: Test GPU\n"
    "    memory: 16GiB\n"
    "    events: [xid]\n";

TEST_F(AbiDeviceTest, IdentityMatchesTheMachine) {
  Machine m = Init("dgx-h100");
  unsigned int count = 0;
  ASSERT_EQ(nvml().nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  ASSERT_EQ(count, m.gpus.size());
  for (unsigned int i = 0; i < count; ++i) {
    SCOPED_TRACE(i);
    const Gpu& g = m.gpus[i];
    nvmlDevice_t d = Device(i);
    char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    EXPECT_EQ(Uuid(d), g.uuid);
    ASSERT_EQ(nvml().nvmlDeviceGetName(d, text, sizeof(text)), NVML_SUCCESS);
    EXPECT_EQ(text, g.name);
    ASSERT_EQ(nvml().nvmlDeviceGetSerial(d, text, sizeof(text)), NVML_SUCCESS);
    EXPECT_EQ(text, g.serial);
    unsigned int value = 0;
    ASSERT_EQ(nvml().nvmlDeviceGetIndex(d, &value), NVML_SUCCESS);
    EXPECT_EQ(value, i);
    ASSERT_EQ(nvml().nvmlDeviceGetMinorNumber(d, &value), NVML_SUCCESS);
    EXPECT_EQ(value, g.minor);
    ASSERT_EQ(nvml().nvmlDeviceGetNumaNodeId(d, &value), NVML_SUCCESS);
    EXPECT_EQ(static_cast<int>(value), g.numa_node);
    nvmlPciInfo_t pci;
    ASSERT_EQ(nvml().nvmlDeviceGetPciInfo_v3(d, &pci), NVML_SUCCESS);
    EXPECT_EQ(pci.busId, g.bus_id);
    EXPECT_EQ(std::string(pci.busIdLegacy), g.bus_id.substr(4));
    EXPECT_EQ(pci.pciDeviceId, g.pci_device_id);
    EXPECT_EQ(pci.pciSubSystemId, g.pci_subsystem_id);
    int major = 0, minor = 0;
    ASSERT_EQ(nvml().nvmlDeviceGetCudaComputeCapability(d, &major, &minor),
              NVML_SUCCESS);
    EXPECT_EQ(major, g.cc_major);
    EXPECT_EQ(minor, g.cc_minor);
    nvmlBrandType_t brand;
    ASSERT_EQ(nvml().nvmlDeviceGetBrand(d, &brand), NVML_SUCCESS);
    EXPECT_EQ(brand, g.brand);
    nvmlDeviceArchitecture_t arch = 0;
    ASSERT_EQ(nvml().nvmlDeviceGetArchitecture(d, &arch), NVML_SUCCESS);
    EXPECT_EQ(arch, g.architecture);
  }
}

TEST_F(AbiDeviceTest, MemoryV1AndV2) {
  Machine m = Init("dgx-h100");
  const Gpu& g = m.gpus[0];
  nvmlMemory_t v1;
  ASSERT_EQ(nvml().nvmlDeviceGetMemoryInfo(Device(0), &v1), NVML_SUCCESS);
  EXPECT_EQ(v1.total, g.memory_total);
  EXPECT_EQ(v1.used, g.memory_used);
  EXPECT_EQ(v1.free, g.memory_total - g.memory_used);
  nvmlMemory_v2_t v2{};
  v2.version = nvmlMemory_v2;
  ASSERT_EQ(nvml().nvmlDeviceGetMemoryInfo_v2(Device(0), &v2), NVML_SUCCESS);
  EXPECT_EQ(v2.version, nvmlMemory_v2);
  EXPECT_EQ(v2.total, g.memory_total);
  EXPECT_EQ(v2.reserved, g.memory_reserved);
  EXPECT_EQ(v2.free + v2.used, v2.total);
  v2.version = 1;
  EXPECT_EQ(nvml().nvmlDeviceGetMemoryInfo_v2(Device(0), &v2),
            NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

TEST_F(AbiDeviceTest, LookupByUuidAndBusId) {
  Machine m = Init("pcie-t4");
  nvmlDevice_t third = Device(2);
  nvmlDevice_t found = nullptr;
  ASSERT_EQ(nvml().nvmlDeviceGetHandleByUUID(m.gpus[2].uuid.c_str(), &found),
            NVML_SUCCESS);
  EXPECT_EQ(found, third);
  std::string bus = m.gpus[2].bus_id;  // "00000000:AF:00.0"
  for (const std::string& form :
       {bus, bus.substr(4), absl::AsciiStrToLower(bus),
        absl::AsciiStrToLower(bus.substr(4))}) {
    found = nullptr;
    ASSERT_EQ(nvml().nvmlDeviceGetHandleByPciBusId_v2(form.c_str(), &found),
              NVML_SUCCESS)
        << form;
    EXPECT_EQ(found, third) << form;
  }
  ASSERT_EQ(nvml().nvmlDeviceGetHandleByPciBusId(bus.c_str(), &found),
            NVML_SUCCESS);
  EXPECT_EQ(found, third);
}

TEST_F(AbiDeviceTest, UnknownIdsAreNotFound) {
  Init("pcie-t4");
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByUUID(
                "GPU-ffffffff-ffff-4fff-8fff-ffffffffffff", &d),
            NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByPciBusId_v2("0000:99:00.0", &d),
            NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByPciBusId_v2("not a bus", &d),
            NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByIndex_v2(4, &d),
            NVML_ERROR_INVALID_ARGUMENT);
}

// dgx-h100's minors follow the driver's probe order, not NVML's bus order
// (sim/profiles/dgx-h100.yaml): the handle by index and by UUID both give
// the minor the profile writes for that GPU.
TEST_F(AbiDeviceTest, MinorNumberIsTheProfilesNotTheIndex) {
  Init("dgx-h100");
  const unsigned want[] = {2, 3, 0, 1, 6, 8, 4, 5};
  for (unsigned i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    nvmlDevice_t by_index = Device(i);
    nvmlDevice_t by_uuid = nullptr;
    ASSERT_EQ(
        nvml().nvmlDeviceGetHandleByUUID(Uuid(by_index).c_str(), &by_uuid),
        NVML_SUCCESS);
    for (nvmlDevice_t d : {by_index, by_uuid}) {
      unsigned int minor = 0;
      ASSERT_EQ(nvml().nvmlDeviceGetMinorNumber(d, &minor), NVML_SUCCESS);
      EXPECT_EQ(minor, want[i]);
    }
  }
}

TEST_F(AbiDeviceTest, NullPointersAreInvalidArguments) {
  Init("pcie-t4");
  nvmlDevice_t d = Device(0);
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByIndex_v2(0, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByUUID(nullptr, &d),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByPciBusId_v2(nullptr, &d),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetUUID(d, nullptr, 80),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetMinorNumber(d, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetPciInfo_v3(d, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetMemoryInfo(d, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetMemoryInfo_v2(d, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  int major = 0;
  EXPECT_EQ(nvml().nvmlDeviceGetCudaComputeCapability(d, &major, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetBrand(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetArchitecture(d, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetGpuFabricInfo(d, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(AbiDeviceTest, ForeignHandlesAreInvalidArguments) {
  Init("pcie-t4");
  // Pointers the simulator never handed out are looked up, not followed.
  int local = 0;
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  for (nvmlDevice_t foreign :
       {static_cast<nvmlDevice_t>(nullptr),
        reinterpret_cast<nvmlDevice_t>(&local),
        reinterpret_cast<nvmlDevice_t>(uintptr_t{0xdeadbeef})}) {
    EXPECT_EQ(nvml().nvmlDeviceGetUUID(foreign, uuid, sizeof(uuid)),
              NVML_ERROR_INVALID_ARGUMENT);
  }
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml().nvmlEventSetCreate(&set), NVML_SUCCESS);
  // An event set is not a device.
  EXPECT_EQ(nvml().nvmlDeviceGetUUID(reinterpret_cast<nvmlDevice_t>(set), uuid,
                                     sizeof(uuid)),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      nvml().nvmlEventSetFree(reinterpret_cast<nvmlEventSet_t>(Device(0))),
      NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlEventSetFree(set), NVML_SUCCESS);
}

TEST_F(AbiDeviceTest, ShortBuffersAreInsufficientSize) {
  Machine m = Init("pcie-t4");
  nvmlDevice_t d = Device(0);
  char buffer[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  unsigned int exact = static_cast<unsigned int>(m.gpus[0].uuid.size() + 1);
  EXPECT_EQ(nvml().nvmlDeviceGetUUID(d, buffer, exact - 1),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvml().nvmlDeviceGetUUID(d, buffer, exact), NVML_SUCCESS);
  EXPECT_EQ(nvml().nvmlDeviceGetName(d, buffer, 5),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvml().nvmlDeviceGetSerial(d, buffer, 2),
            NVML_ERROR_INSUFFICIENT_SIZE);
}

TEST_F(AbiDeviceTest, NotSupportedCorners) {
  Init(WriteTempFile("bare.yaml", kBareGpu));
  nvmlDevice_t d = Device(0);
  unsigned int node = 0;
  EXPECT_EQ(nvml().nvmlDeviceGetNumaNodeId(d, &node), NVML_ERROR_NOT_SUPPORTED);
  unsigned long mask[2];
  EXPECT_EQ(nvml().nvmlDeviceGetCpuAffinity(d, 2, mask),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuFabricInfo_t fabric = {};
  EXPECT_EQ(nvml().nvmlDeviceGetGpuFabricInfo(d, &fabric),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuFabricInfoV_t fabric_v = {};
  fabric_v.version = nvmlGpuFabricInfo_v3;
  EXPECT_EQ(nvml().nvmlDeviceGetGpuFabricInfoV(d, &fabric_v),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(AbiDeviceTest, FabricInfoInEveryStructVersion) {
  Machine m = Init("gb200-nvl");
  const GpuFabric& want = m.gpus[1].fabric.value();
  nvmlDevice_t d = Device(1);

  nvmlGpuFabricInfo_t v1 = {};
  ASSERT_EQ(nvml().nvmlDeviceGetGpuFabricInfo(d, &v1), NVML_SUCCESS);
  EXPECT_EQ(std::memcmp(v1.clusterUuid, want.cluster_uuid.data(), 16), 0);
  EXPECT_EQ(v1.cliqueId, 32766u);
  EXPECT_EQ(v1.state, NVML_GPU_FABRIC_STATE_COMPLETED);
  EXPECT_EQ(v1.status, NVML_SUCCESS);

  nvmlGpuFabricInfoV_t v3 = {};
  v3.version = nvmlGpuFabricInfo_v3;
  ASSERT_EQ(nvml().nvmlDeviceGetGpuFabricInfoV(d, &v3), NVML_SUCCESS);
  EXPECT_EQ(std::memcmp(v3.clusterUuid, want.cluster_uuid.data(), 16), 0);
  EXPECT_EQ(v3.cliqueId, 32766u);
  EXPECT_EQ(v3.state, NVML_GPU_FABRIC_STATE_COMPLETED);
  EXPECT_EQ(v3.healthSummary, NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY);

  // A v2 caller's buffer ends before healthSummary: that byte is untouched.
  unsigned char buffer[sizeof(nvmlGpuFabricInfo_v3_t)];
  std::memset(buffer, 0xAB, sizeof(buffer));
  auto* v2 = reinterpret_cast<nvmlGpuFabricInfo_v2_t*>(buffer);
  v2->version = nvmlGpuFabricInfo_v2;
  ASSERT_EQ(nvml().nvmlDeviceGetGpuFabricInfoV(
                d, reinterpret_cast<nvmlGpuFabricInfoV_t*>(buffer)),
            NVML_SUCCESS);
  EXPECT_EQ(v2->cliqueId, 32766u);
  EXPECT_EQ(v2->healthMask, 0u);
  EXPECT_EQ(buffer[sizeof(nvmlGpuFabricInfo_v2_t)], 0xAB);

  nvmlGpuFabricInfoV_t bad = {};
  bad.version = 7u << 24 | sizeof(bad);
  EXPECT_EQ(nvml().nvmlDeviceGetGpuFabricInfoV(d, &bad),
            NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

TEST_F(AbiDeviceTest, BlackwellArchitecture) {
  Init("dgx-b200");
  nvmlDeviceArchitecture_t arch = 0;
  ASSERT_EQ(nvml().nvmlDeviceGetArchitecture(Device(0), &arch), NVML_SUCCESS);
  EXPECT_EQ(arch, static_cast<nvmlDeviceArchitecture_t>(10));
  nvmlGpuFabricInfo_t fabric = {};
  EXPECT_EQ(nvml().nvmlDeviceGetGpuFabricInfo(Device(0), &fabric),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(AbiDeviceTest, UnversionedPciInfoWritesTheOldLayoutOnly) {
  Machine m = Init("pcie-t4");
  unsigned char buffer[sizeof(nvmlPciInfo_t)];
  std::memset(buffer, 0xAB, sizeof(buffer));
  ASSERT_EQ(nvml().nvmlDeviceGetPciInfo(
                Device(0), reinterpret_cast<nvmlPciInfo_t*>(buffer)),
            NVML_SUCCESS);
  EXPECT_EQ(reinterpret_cast<char*>(buffer), m.gpus[0].bus_id.substr(4));
  EXPECT_EQ(buffer[sizeof(buffer) - 1], 0xAB);  // past the 52-byte v1 struct
  nvmlPciInfo_t v2;
  ASSERT_EQ(nvml().nvmlDeviceGetPciInfo_v2(Device(0), &v2), NVML_SUCCESS);
  EXPECT_EQ(v2.busId, m.gpus[0].bus_id);
}

}  // namespace
}  // namespace gpulet::sim::testing
