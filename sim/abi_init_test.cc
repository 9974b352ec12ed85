// ABI tests: exported symbols, initialisation, machine selection and load
// errors, system queries.
#include <dlfcn.h>
#include <stdlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/testing/abi_test_util.h"

namespace gpulet::sim::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using AbiInitTest = SimTest;

TEST(AbiSymbolsTest, EveryDeclaredFunctionIsExported) {
  const NvmlApi& api = Api();
  ASSERT_NE(api.handle, nullptr);
  EXPECT_THAT(api.missing, ::testing::IsEmpty());
}

TEST(AbiSymbolsTest, GpuletInternalsStayHidden) {
  ASSERT_NE(Api().handle, nullptr);
  for (const char* symbol :
       {"_ZN6gpulet3sim5StateEv",  // State()
        "_ZN6gpulet3sim11LoadMachineERKNSt7__cxx1112basic_stringIcSt11char_"
        "traitsIcESaIcEEE",  // LoadMachine
        "_ZN6gpulet6common13ErrnoToStatusEiN4absl7debian311string_"
        "viewE"}) {  // common
    EXPECT_EQ(::dlsym(Api().handle, symbol), nullptr) << symbol;
  }
}

TEST_F(AbiInitTest, EverythingIsUninitializedBeforeInit) {
  unsigned int count = 0;
  char buffer[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  nvmlEventSet_t set = nullptr;
  EXPECT_EQ(nvml().nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml().nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml().nvmlSystemGetDriverVersion(buffer, sizeof(buffer)),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml().nvmlEventSetCreate(&set), NVML_ERROR_UNINITIALIZED);
  EXPECT_STREQ(nvml().nvmlErrorString(NVML_ERROR_UNINITIALIZED),
               "Uninitialized");
}

TEST_F(AbiInitTest, InitIsReferenceCounted) {
  Use("dgx-h100");
  ASSERT_EQ(nvml().nvmlInit_v2(), NVML_SUCCESS);
  ASSERT_EQ(nvml().nvmlInitWithFlags(0), NVML_SUCCESS);
  nvmlDevice_t device = Device(0);
  EXPECT_EQ(nvml().nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(Uuid(device).substr(0, 4), "GPU-");
  EXPECT_EQ(nvml().nvmlShutdown(), NVML_SUCCESS);
  // A handle kept past the last shutdown answers, it does not crash.
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  EXPECT_EQ(nvml().nvmlDeviceGetUUID(device, uuid, sizeof(uuid)),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml().nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  // Handles are stable across init cycles, as NVIDIA's are.
  ASSERT_EQ(nvml().nvmlInit(), NVML_SUCCESS);
  EXPECT_EQ(Device(0), device);
}

TEST_F(AbiInitTest, DefaultMachineIsDgxH100) {
  Machine expected = Use("dgx-h100");
  ::unsetenv("GPULET_SIM_MACHINE");
  ASSERT_EQ(nvml().nvmlInit_v2(), NVML_SUCCESS);
  unsigned int count = 0;
  ASSERT_EQ(nvml().nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, expected.gpus.size());
  EXPECT_EQ(Uuid(Device(0)), expected.gpus[0].uuid);
}

TEST_F(AbiInitTest, MachineSwitchAfterFullShutdown) {
  Init("dgx-h100");
  nvmlDevice_t last = Device(7);
  ASSERT_EQ(nvml().nvmlShutdown(), NVML_SUCCESS);
  Machine t4 = Init("pcie-t4");
  unsigned int count = 0;
  ASSERT_EQ(nvml().nvmlDeviceGetCount(&count), NVML_SUCCESS);
  EXPECT_EQ(count, t4.gpus.size());
  EXPECT_EQ(Uuid(Device(0)), t4.gpus[0].uuid);
  // GPU 7 does not exist on this machine: its old handle is no handle.
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  EXPECT_EQ(nvml().nvmlDeviceGetUUID(last, uuid, sizeof(uuid)),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(AbiInitTest, NoDriver) {
  Use("no-driver");
  EXPECT_EQ(nvml().nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_EQ(nvml().nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS),
            NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_STREQ(nvml().nvmlErrorString(NVML_ERROR_DRIVER_NOT_LOADED),
               "Driver Not Loaded");
  unsigned int count = 0;
  EXPECT_EQ(nvml().nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
}

// A node with the driver but no GPU initialises and reports zero devices.
TEST_F(AbiInitTest, NoGpusInitialisesWithZeroDevices) {
  Use("none");
  ASSERT_EQ(nvml().nvmlInit_v2(), NVML_SUCCESS);
  ASSERT_EQ(nvml().nvmlShutdown(), NVML_SUCCESS);
  ASSERT_EQ(nvml().nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS), NVML_SUCCESS);
  unsigned int count = 99;
  ASSERT_EQ(nvml().nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  EXPECT_EQ(nvml().nvmlSystemGetDriverVersion(version, sizeof(version)),
            NVML_SUCCESS);
}

TEST_F(AbiInitTest, BadMachineFileExplainsItselfInErrorString) {
  std::string path =
      WriteTempFile("bad.yaml",
                    "gpus:\n"
                    "  - uuid: GPU-00000000-0000-4000-8000-000000000000\n"
                    "    busId: \"not-a-bus-id\"\n"
                    "    name: Test GPU\n"
                    "    memory: 16GiB\n");
  ::setenv("GPULET_SIM_MACHINE", path.c_str(), 1);
  ASSERT_EQ(nvml().nvmlInit_v2(), NVML_ERROR_UNKNOWN);
  std::string text = nvml().nvmlErrorString(NVML_ERROR_UNKNOWN);
  EXPECT_THAT(text, StartsWith("Unknown Error: "));
  EXPECT_THAT(text, HasSubstr(path + ":3"));
  EXPECT_THAT(text, HasSubstr("busId"));
  EXPECT_EQ(nvml().nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(AbiInitTest, UnknownProfileIsNamed) {
  ::setenv("GPULET_SIM_MACHINE", "dgx-h1000", 1);
  ASSERT_EQ(nvml().nvmlInit_v2(), NVML_ERROR_UNKNOWN);
  EXPECT_THAT(nvml().nvmlErrorString(NVML_ERROR_UNKNOWN),
              HasSubstr("dgx-h1000"));
  // A later good machine clears the detail.
  Init("pcie-t4");
  EXPECT_STREQ(nvml().nvmlErrorString(NVML_ERROR_UNKNOWN), "Unknown Error");
}

TEST_F(AbiInitTest, SystemQueries) {
  Machine m = Init("pcie-t4");
  char buffer[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
  ASSERT_EQ(nvml().nvmlSystemGetDriverVersion(buffer, sizeof(buffer)),
            NVML_SUCCESS);
  EXPECT_EQ(buffer, m.driver_version);
  ASSERT_EQ(nvml().nvmlSystemGetNVMLVersion(buffer, sizeof(buffer)),
            NVML_SUCCESS);
  EXPECT_EQ(buffer, m.nvml_version);
  EXPECT_EQ(nvml().nvmlSystemGetDriverVersion(buffer, 4),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvml().nvmlSystemGetDriverVersion(nullptr, 80),
            NVML_ERROR_INVALID_ARGUMENT);
  int cuda = 0;
  ASSERT_EQ(nvml().nvmlSystemGetCudaDriverVersion(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, m.cuda_driver_version);
  ASSERT_EQ(nvml().nvmlSystemGetCudaDriverVersion_v2(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, m.cuda_driver_version);
  EXPECT_EQ(nvml().nvmlSystemGetCudaDriverVersion(nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml().nvmlDeviceGetCount_v2(nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gpulet::sim::testing
