// `gpulet vfio bind|unbind <gpu>...`: moves each GPU's IOMMU group to
// vfio-pci (and back) through sysfs (docs/passthrough.md). A GPU is named
// by index (PCI address order of the NVIDIA GPUs in sysfs), PCI address or
// UUID (looked up through NVML, which knows only GPUs on the nvidia
// driver), or chosen by a configuration file's passthrough.devices
// (--config FILE: the daemon's own selection; its sysRoot and devRoot are
// the defaults of --sys-root and --dev-root). Flags: --dry-run (print each
// write, change nothing),
// --sys-root (/sys), --dev-root (/dev), --state-dir (where the previous
// drivers are kept, /var/lib/gpulet/vfio), --timeout-ms (how long to wait
// for the kernel to show each change).
//
// Thread safety: run on the main thread, one command per process.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "CLI/App.hpp"
#include "absl/status/status.h"
#include "src/cli/global_options.h"

namespace gpulet::cli {

struct VfioOptions {
  std::vector<std::string> gpus;
  std::string config_file;  // --config: select from its passthrough section
  bool dry_run = false;
  std::string sys_root = "/sys";
  std::string dev_root = "/dev";
  std::string state_dir = "/var/lib/gpulet/vfio";
  int timeout_ms = 10000;
  CLI::App* bind = nullptr;
  CLI::App* unbind = nullptr;
  // Whether --sys-root / --dev-root were given (else --config's win).
  bool sys_root_given = false;
  bool dev_root_given = false;
};

CLI::App* AddVfioCommand(CLI::App& app, VfioOptions& options);

// Binds or unbinds each GPU in turn, stopping at the first failure (the
// GPUs before it stay as they now are). Errors name the GPU and the path.
absl::Status RunVfio(const GlobalOptions& global, const VfioOptions& options,
                     std::ostream& out);

}  // namespace gpulet::cli
