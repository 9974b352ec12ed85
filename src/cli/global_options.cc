#include "src/cli/global_options.h"

#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "src/base/common/logging.h"
#include "src/gpu/device/nvml_error_kind.h"
#include "src/gpu/nvml/dynamic_library.h"

namespace gpulet::cli {
namespace {

// klog's -v: a whole number, 0 or more. CLI11's NonNegativeNumber would name
// the largest double as the upper bound.
std::string CheckVerbosity(std::string& value) {
  int level = 0;
  if (!absl::SimpleAtoi(value, &level) || level < 0) {
    return "'" + value +
           "' is not a verbosity level (a whole number, 0 or more)";
  }
  return "";
}

}  // namespace

void AddGlobalOptions(CLI::App& app, GlobalOptions& options) {
  app.add_option("--driver-root,--nvidia-driver-root", options.driver_root,
                 "Root of the NVIDIA driver installation to search for "
                 "libnvidia-ml.so.1")
      ->envname("NVIDIA_DRIVER_ROOT")
      ->capture_default_str();
  app.add_option("--nvml-lib", options.nvml_lib,
                 "Explicit NVML library file (skips the search)")
      ->envname("GPULET_NVML_LIB");
  app.add_option("--sysfs-root", options.sysfs_root,
                 "sysfs mount used when NVML cannot report a GPU's NUMA node, "
                 "and for the GPUs' PCI class (node labels)")
      ->capture_default_str();
  app.add_option("-v,--v", options.verbosity, "Log verbosity level")
      ->check(CLI::Validator(CheckVerbosity, "LEVEL"))
      ->capture_default_str();
  app.add_option("--log-format", options.log_format, "Log format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

void ApplyLogging(const GlobalOptions& options) {
  common::SetVerbosity(options.verbosity);
  common::SetLogFormat(options.log_format == "json" ? common::LogFormat::kJson
                                                    : common::LogFormat::kText);
}

absl::StatusOr<NvmlSession> OpenNvml(const GlobalOptions& options) {
  nvml::LoadOptions load;
  load.driver_root = options.driver_root;
  load.library_path = options.nvml_lib;
  absl::StatusOr<nvml::LibraryPtr> lib = nvml::OpenLibrary(load);
  if (!lib.ok()) return lib.status();
  GPULET_VLOG(1) << "loaded NVML from " << (*lib)->Path();
  absl::Status init = (*lib)->Init();
  if (device::IsNvmlGpuNotFound(init)) {
    GPULET_VLOG(1) << "no GPUs: " << init.message();
    return NvmlSession{};
  }
  if (!init.ok()) return init;
  return NvmlSession{*std::move(lib)};
}

}  // namespace gpulet::cli
