#include "test/integration/gpulet_runner.h"

#include <stdlib.h>

#include <filesystem>

namespace gpulet::testing {
namespace {

// A sysfs root that does not exist: the NUMA fallback must not read the
// host's /sys, whose devices have nothing to do with the simulated ones.
constexpr char kNoSysfs[] = "/nonexistent/gpulet-test-sysfs";

Environment Hermetic(const std::string& machine, Environment env) {
  for (const char* name : {"GPULET_SIM_SOCKET", "GPULET_NVML_LIB",
                           "NVIDIA_DRIVER_ROOT", "GPULET_SIM_MACHINE"}) {
    env.unset.push_back(name);
  }
  if (!machine.empty()) env.set.emplace("GPULET_SIM_MACHINE", machine);
  return env;
}

}  // namespace

std::string GpuletBinary() { return GPULET_BINARY; }
std::string SimLibDir() { return GPULET_SIM_LIB_DIR; }
std::string SimLibPath() { return SimLibDir() + "/libnvidia-ml.so.1"; }
std::string SimHostBinary() { return SIM_HOST_BINARY; }

ProcessResult RunGpulet(const std::string& machine,
                        const std::vector<std::string>& args, Environment env) {
  std::vector<std::string> argv = {GpuletBinary(), "--nvml-lib", SimLibPath(),
                                   "--sysfs-root", kNoSysfs};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, Hermetic(machine, std::move(env)));
}

ProcessResult RunGpuletSearching(const std::string& machine,
                                 const std::vector<std::string>& args,
                                 Environment env) {
  std::vector<std::string> argv = {GpuletBinary(), "--sysfs-root", kNoSysfs};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, Hermetic(machine, std::move(env)));
}

std::string Describe(const ProcessResult& r) {
  return "exit " + std::to_string(r.exit_code) +
         (r.term_signal != 0 ? " signal " + std::to_string(r.term_signal)
                             : "") +
         "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

TempDir::TempDir() {
  char dir[] = "/tmp/gpulet-it-XXXXXX";
  if (mkdtemp(dir) != nullptr) path_ = dir;
}

TempDir::~TempDir() {
  std::error_code ignored;
  if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
}

}  // namespace gpulet::testing
