// Helpers shared by the CLI integration tests: run the built `gpulet`
// binary against the NVML simulator with a hermetic environment, and
// temporary directories with short paths (unix sockets need < 108 chars).
//
// Thread safety: none; one test thread.
#pragma once

#include <string>
#include <vector>

#include "test/integration/subprocess.h"

namespace gpulet::testing {

// Paths baked in by CMake.
std::string GpuletBinary();
std::string SimLibDir();
std::string SimLibPath();  // SimLibDir() + "/libnvidia-ml.so.1"
std::string SimHostBinary();

// Runs `gpulet --nvml-lib <sim> --sysfs-root <none> <args...>` with
// GPULET_SIM_MACHINE=machine (unset when empty: the simulator's default) and
// no inherited gpulet/NVIDIA variables.
// `env` is applied on top.
ProcessResult RunGpulet(const std::string& machine,
                        const std::vector<std::string>& args,
                        Environment env = {});

// Like RunGpulet but without --nvml-lib, so the loader's search runs.
ProcessResult RunGpuletSearching(const std::string& machine,
                                 const std::vector<std::string>& args,
                                 Environment env);

// Human-readable summary for assertion messages.
std::string Describe(const ProcessResult& result);

// A fresh directory under /tmp, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace gpulet::testing
