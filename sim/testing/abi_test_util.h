// Test support for the simulator's ABI tests: the built libnvidia-ml.so.1
// loaded with dlopen (never linked), every GPULET_NVML_FUNCTIONS symbol
// resolved with dlsym, and a fixture that selects a machine through
// $GPULET_SIM_MACHINE and fully shuts NVML down after each test.
//
// The library stays loaded for the whole test process (it is linked with
// -z nodelete), so fault state would leak between tests run in one process:
// the fixture restores lost GPUs in TearDown.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sim/machine.h"
#include "src/gpu/nvml/nvml_api.h"

namespace gpulet::sim::testing {

// Typed pointers to the library's exports, named like the functions.
struct NvmlApi {
#define GPULET_NVML_API_MEMBER(name, params) decltype(&::name) name = nullptr;
  GPULET_NVML_FUNCTIONS(GPULET_NVML_API_MEMBER)
#undef GPULET_NVML_API_MEMBER
  decltype(&::nvmlErrorString) nvmlErrorString = nullptr;

  void* handle = nullptr;
  std::string path;
  std::vector<std::string> missing;  // symbols dlsym did not find
};

// Loads the library once per process; later calls return the same table.
const NvmlApi& Api();

// The control socket this test process's simulator serves (set in
// $GPULET_SIM_SOCKET before the first nvmlInit).
const std::string& SocketPath();

// A short-lived temporary directory (< 108-byte socket paths), removed with
// its files when the process exits.
const std::string& TempDir();

// Writes `contents` to TempDir()/name and returns the path.
std::string WriteTempFile(const std::string& name, const std::string& contents);

class SimTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  const NvmlApi& nvml() const { return Api(); }

  // Selects the machine for the next nvmlInit and returns the model the
  // simulator will load for it (parsed in-process, for expectations).
  Machine Use(const std::string& spec);
  // Use(spec) + nvmlInit_v2, asserting success.
  Machine Init(const std::string& spec);

  nvmlDevice_t Device(unsigned index);
  std::string Uuid(nvmlDevice_t device);

  // Sends a control command to this process's simulator.
  absl::StatusOr<std::string> Control(const std::string& line);
};

}  // namespace gpulet::sim::testing
