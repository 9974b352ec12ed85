// Options every gpulet subcommand shares, their CLI11 registration, and the
// NVML session they lead to. Flags win over environment variables, which win
// over defaults (CLI11's envname rule), as in NVIDIA's device plugin.
//
// Ownership: GlobalOptions is a value filled in by CLI11 during parsing.
// Thread safety: not shared between threads.
#pragma once

#include <string>

#include "CLI/App.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/gpu/nvml/library.h"

namespace gpulet::cli {

struct GlobalOptions {
  std::string driver_root = "/";    // --driver-root, NVIDIA_DRIVER_ROOT
  std::string nvml_lib;             // --nvml-lib, GPULET_NVML_LIB
  std::string sysfs_root = "/sys";  // --sysfs-root (NUMA fallback)
  int verbosity = 0;                // -v / --v
  std::string log_format = "text";  // --log-format text|json
};

void AddGlobalOptions(CLI::App& app, GlobalOptions& options);

// Sets the process-wide log format and verbosity from `options`.
void ApplyLogging(const GlobalOptions& options);

// NVML loaded as the options say. `lib` is null when the driver is loaded
// but the node has no GPU: nvmlInit_v2 then fails with
// NVML_ERROR_GPU_NOT_FOUND, as the real NVML does, and there is nothing to
// query. Otherwise `lib` is initialised once; its destructor shuts NVML down.
struct NvmlSession {
  nvml::LibraryPtr lib;
};

absl::StatusOr<NvmlSession> OpenNvml(const GlobalOptions& options);

}  // namespace gpulet::cli
