#include "src/cli/devices_format.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "src/cli/table.h"

namespace gpulet::cli {
namespace {

using json = nlohmann::ordered_json;

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string MiB(uint64_t bytes) { return absl::StrCat(bytes / kMiB, " MiB"); }

std::string OrNa(const std::string& s) { return s.empty() ? "N/A" : s; }

std::string MigMode(const device::Gpu& gpu) {
  if (!gpu.mig_capable) return "N/A";
  return gpu.mig_enabled ? "Enabled" : "Disabled";
}

std::string MigIndex(const device::MigDevice& mig) {
  return absl::StrCat(mig.parent_index, ":", mig.mig_index);
}

json MigJson(const device::MigDevice& mig) {
  return json{{"index", MigIndex(mig)},
              {"uuid", mig.uuid},
              {"parentIndex", mig.parent_index},
              {"migIndex", mig.mig_index},
              {"gpuInstanceId", mig.gpu_instance_id},
              {"computeInstanceId", mig.compute_instance_id},
              {"profile", mig.profile},
              {"memoryBytes", mig.memory_bytes},
              {"gpuInstanceSliceCount", mig.gi_slice_count},
              {"computeInstanceSliceCount", mig.ci_slice_count},
              {"multiprocessorCount", mig.multiprocessor_count}};
}

json FabricJson(const std::optional<device::GpuFabric>& fabric) {
  if (!fabric) return json(nullptr);
  return json{{"clusterUuid", fabric->cluster_uuid},
              {"cliqueId", fabric->clique_id},
              {"state", fabric->state},
              {"health", fabric->health},
              {"error", fabric->error}};
}

json GpuJson(const device::Gpu& gpu) {
  json migs = json::array();
  for (const auto& mig : gpu.mig_devices) migs.push_back(MigJson(mig));
  return json{
      {"index", gpu.index},
      {"uuid", gpu.uuid},
      {"name", gpu.name},
      {"serial", gpu.serial},
      {"minor", gpu.minor},
      {"busId", gpu.bus_id},
      {"pciDeviceId", absl::StrFormat("0x%08X", gpu.pci_device_id)},
      {"memoryTotalBytes", gpu.memory_total_bytes},
      {"numaNode", gpu.numa_node ? json(*gpu.numa_node) : json(nullptr)},
      {"cpuAffinity", FormatCpuList(gpu.cpu_affinity)},
      {"computeCapability", absl::StrCat(gpu.cc_major, ".", gpu.cc_minor)},
      {"architecture", gpu.architecture},
      {"brand", gpu.brand},
      {"migCapable", gpu.mig_capable},
      {"migEnabled", gpu.mig_enabled},
      {"migDevices", std::move(migs)},
      {"fabric", FabricJson(gpu.fabric)}};
}

}  // namespace

std::string FormatDevicesTable(const device::Node& node) {
  std::string out = absl::StrCat(
      "Driver Version: ", OrNa(node.driver_version),
      "    NVML Version: ", OrNa(node.nvml_version), "    CUDA Version: ",
      OrNa(device::CudaVersionString(node.cuda_driver_version)), "\n");
  Table table({"INDEX", "UUID", "NAME", "MEMORY", "BUS ID", "NUMA", "MIG"});
  for (const device::Gpu& gpu : node.gpus) {
    table.AddRow({absl::StrCat(gpu.index), gpu.uuid, gpu.name,
                  MiB(gpu.memory_total_bytes), gpu.bus_id,
                  gpu.numa_node ? absl::StrCat(*gpu.numa_node) : "N/A",
                  MigMode(gpu)});
    for (const device::MigDevice& mig : gpu.mig_devices) {
      table.AddRow({absl::StrCat("  ", MigIndex(mig)), mig.uuid,
                    absl::StrCat("MIG ", mig.profile), MiB(mig.memory_bytes),
                    "", "",
                    absl::StrCat("GI ", mig.gpu_instance_id, " CI ",
                                 mig.compute_instance_id)});
    }
  }
  absl::StrAppend(&out, table.Render());
  return out;
}

std::string FormatDevicesJson(const device::Node& node) {
  json gpus = json::array();
  for (const device::Gpu& gpu : node.gpus) gpus.push_back(GpuJson(gpu));
  json doc{{"driverVersion", node.driver_version},
           {"nvmlVersion", node.nvml_version},
           {"cudaDriverVersion", node.cuda_driver_version},
           {"cudaVersion", device::CudaVersionString(node.cuda_driver_version)},
           {"gpus", std::move(gpus)}};
  // Replace rather than throw on bytes that are not UTF-8 (a driver could
  // report anything as a name).
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace gpulet::cli
