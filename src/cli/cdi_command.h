// `gpulet cdi generate`: discover the node's GPUs through NVML and the
// driver's files under --driver-root, and print or write the CDI spec
// (docs/cdi.md). Wiring only; the spec is built by src/model/cdi.
//
// Thread safety: run on the main thread, one command per process.
#pragma once

#include <ostream>
#include <string>

#include "CLI/App.hpp"
#include "absl/status/status.h"
#include "src/cli/global_options.h"

namespace gpulet::cli {

struct CdiOptions {
  std::string format = "yaml";  // --format yaml|json
  std::string output;           // --output FILE; empty: stdout
  std::string vendor = "nvidia.com";
  std::string cls = "gpu";
  std::string dev_root;   // --dev-root, NVIDIA_DEV_ROOT; empty: driver root
  std::string hook_path;  // --hook-path; empty: /usr/bin/gpulet-runtime
  bool skip_unresolved_mig = false;  // --skip-unresolved-mig
  // --passthrough-output FILE: also write the <vendor>/pgpu spec of the GPUs
  // bound to vfio-pci there (read under --sysfs-root and --vfio-dev-root).
  std::string passthrough_output;
  std::string vfio_dev_root = "/dev";  // --vfio-dev-root
};

// Registers `cdi` and its `generate` subcommand.
CLI::App* AddCdiCommand(CLI::App& app, CdiOptions& options);

// Runs `cdi generate`: the spec goes to `out` or, with --output, to the
// file (written atomically).
absl::Status RunCdi(const GlobalOptions& global, const CdiOptions& options,
                    std::ostream& out);

}  // namespace gpulet::cli
