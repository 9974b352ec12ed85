#include "src/cli/inventory_commands.h"

#include "src/base/common/status_macros.h"
#include "src/cli/devices_format.h"
#include "src/cli/topo_format.h"
#include "src/gpu/device/discovery.h"
#include "src/gpu/device/topology.h"

namespace gpulet::cli {

CLI::App* AddDevicesCommand(CLI::App& app, InventoryOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "devices", "List GPUs and MIG devices as NVML reports them");
  cmd->add_flag("--json", options.json, "Print JSON instead of a table");
  return cmd;
}

CLI::App* AddTopoCommand(CLI::App& app, InventoryOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "topo", "Print the GPU interconnect matrix (like nvidia-smi topo -m)");
  cmd->add_flag("--json", options.json,
                "Print the full topology model as JSON");
  return cmd;
}

absl::Status RunDevices(const GlobalOptions& global,
                        const InventoryOptions& options, std::ostream& out) {
  GPULET_ASSIGN_OR_RETURN(NvmlSession nvml, OpenNvml(global));
  device::Node node;  // stays empty on a node without GPUs
  if (nvml.lib != nullptr) {
    GPULET_ASSIGN_OR_RETURN(
        node, device::Discover(*nvml.lib,
                               device::DiscoveryOptions{global.sysfs_root}));
    GPULET_RETURN_IF_ERROR(nvml.lib->Shutdown());
  }
  out << (options.json ? FormatDevicesJson(node) : FormatDevicesTable(node));
  return absl::OkStatus();
}

absl::Status RunTopo(const GlobalOptions& global,
                     const InventoryOptions& options, std::ostream& out) {
  GPULET_ASSIGN_OR_RETURN(NvmlSession nvml, OpenNvml(global));
  device::Topology topology;  // stays empty on a node without GPUs
  if (nvml.lib != nullptr) {
    GPULET_ASSIGN_OR_RETURN(
        device::Node node, device::Discover(*nvml.lib, device::DiscoveryOptions{
                                                           global.sysfs_root}));
    GPULET_ASSIGN_OR_RETURN(topology, device::BuildTopology(*nvml.lib, node));
    GPULET_RETURN_IF_ERROR(nvml.lib->Shutdown());
  }
  out << (options.json ? FormatTopoJson(topology) : FormatTopoMatrix(topology));
  return absl::OkStatus();
}

}  // namespace gpulet::cli
