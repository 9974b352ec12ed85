#include "sim/testing/abi_test_util.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "sim/control_client.h"
#include "sim/profiles.h"

namespace gpulet::sim::testing {
namespace {

struct TempDirectory {
  TempDirectory() {
    char pattern[] = "/tmp/gsimabiXXXXXX";
    if (::mkdtemp(pattern) != nullptr) path = pattern;
  }
  ~TempDirectory() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
  std::string path;
};

NvmlApi Load() {
  NvmlApi api;
  api.path = std::string(GPULET_SIM_LIB_DIR) + "/libnvidia-ml.so.1";
  // The socket must be named before the first nvmlInit of the process.
  ::setenv("GPULET_SIM_SOCKET", SocketPath().c_str(), 1);
  api.handle = ::dlopen(api.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api.handle == nullptr) {
    ADD_FAILURE() << "dlopen " << api.path << ": " << ::dlerror();
    return api;
  }
#define GPULET_NVML_API_RESOLVE(name, params)                                  \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(api.handle, #name)); \
  if (api.name == nullptr) api.missing.push_back(#name);
  GPULET_NVML_FUNCTIONS(GPULET_NVML_API_RESOLVE)
  GPULET_NVML_API_RESOLVE(nvmlErrorString, ())
#undef GPULET_NVML_API_RESOLVE
  return api;
}

}  // namespace

const std::string& TempDir() {
  static const TempDirectory dir;  // removed at exit
  return dir.path;
}

const std::string& SocketPath() {
  static const std::string path = TempDir() + "/ctl.sock";
  return path;
}

const NvmlApi& Api() {
  static const NvmlApi api = Load();
  return api;
}

std::string WriteTempFile(const std::string& name,
                          const std::string& contents) {
  std::string path = TempDir() + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

void SimTest::SetUp() {
  ASSERT_NE(Api().handle, nullptr) << "simulator library not loaded";
  ASSERT_TRUE(Api().missing.empty()) << "missing " << Api().missing.front();
  // Leftovers of a failed test in the same process.
  while (nvml().nvmlShutdown() == NVML_SUCCESS) {
  }
}

void SimTest::TearDown() {
  unsigned int count = 0;
  if (nvml().nvmlDeviceGetCount_v2 != nullptr &&
      nvml().nvmlDeviceGetCount_v2(&count) == NVML_SUCCESS) {
    for (unsigned int i = 0; i < count; ++i) {
      (void)Control("restore " + std::to_string(i));
    }
  }
  if (nvml().nvmlShutdown == nullptr) return;
  while (nvml().nvmlShutdown() == NVML_SUCCESS) {
  }
}

Machine SimTest::Use(const std::string& spec) {
  ::setenv("GPULET_SIM_MACHINE", spec.c_str(), 1);
  absl::StatusOr<Machine> machine = LoadMachine(spec);
  EXPECT_TRUE(machine.ok()) << spec << ": " << machine.status();
  return machine.ok() ? *std::move(machine) : Machine{};
}

Machine SimTest::Init(const std::string& spec) {
  Machine machine = Use(spec);
  nvmlReturn_t result = nvml().nvmlInit_v2();
  EXPECT_EQ(result, NVML_SUCCESS)
      << spec << ": " << nvml().nvmlErrorString(result);
  return machine;
}

nvmlDevice_t SimTest::Device(unsigned index) {
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvml().nvmlDeviceGetHandleByIndex_v2(index, &device), NVML_SUCCESS)
      << "GPU " << index;
  return device;
}

std::string SimTest::Uuid(nvmlDevice_t device) {
  char buffer[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  EXPECT_EQ(nvml().nvmlDeviceGetUUID(device, buffer, sizeof(buffer)),
            NVML_SUCCESS);
  return buffer;
}

absl::StatusOr<std::string> SimTest::Control(const std::string& line) {
  return SendControlCommand(SocketPath(), line);
}

}  // namespace gpulet::sim::testing
