// `gpulet devices` and `gpulet topo`: load NVML, discover the node, print.
// Wiring only; the output formats live in devices_format.h and
// topo_format.h.
//
// Thread safety: run on the main thread, one command per process.
#pragma once

#include <ostream>

#include "CLI/App.hpp"
#include "absl/status/status.h"
#include "src/cli/global_options.h"

namespace gpulet::cli {

struct InventoryOptions {
  bool json = false;
};

CLI::App* AddDevicesCommand(CLI::App& app, InventoryOptions& options);
CLI::App* AddTopoCommand(CLI::App& app, InventoryOptions& options);

absl::Status RunDevices(const GlobalOptions& global,
                        const InventoryOptions& options, std::ostream& out);
absl::Status RunTopo(const GlobalOptions& global,
                     const InventoryOptions& options, std::ostream& out);

}  // namespace gpulet::cli
