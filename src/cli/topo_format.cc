#include "src/cli/topo_format.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/cli/table.h"

namespace gpulet::cli {
namespace {

using json = nlohmann::ordered_json;

constexpr char kLegend[] =
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect "
    "between NUMA nodes (e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between "
    "PCIe Host Bridges within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge "
    "(typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing "
    "the PCIe Host Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks (direct or "
    "through NVSwitch)\n";

std::string GpuLabel(const device::TopologyGpu& gpu) {
  return absl::StrCat("GPU", gpu.index);
}

std::string NumaName(const device::TopologyGpu& gpu) {
  return gpu.numa_node ? absl::StrCat(*gpu.numa_node) : "N/A";
}

json P2PJson(const device::P2PStatus& p2p) {
  return json{{"read", device::P2PStatusName(p2p.read)},
              {"write", device::P2PStatusName(p2p.write)},
              {"nvlink", device::P2PStatusName(p2p.nvlink)},
              {"atomics", device::P2PStatusName(p2p.atomics)}};
}

json PairJson(const device::Topology& topology, size_t a, size_t b) {
  const device::TopologyPair& pair = topology.pair(a, b);
  return json{{"gpu1", topology.gpu(a).index},
              {"gpu2", topology.gpu(b).index},
              {"connection", ConnectionName(topology, a, b)},
              {"level", device::TopologyLevelName(pair.level)},
              {"nvlinkKind", device::LinkKindName(pair.links.kind)},
              {"nvlinkCount", pair.links.count},
              {"directLinks", pair.links.direct},
              {"switchedLinks", pair.links.switched},
              {"p2p", P2PJson(pair.p2p)}};
}

}  // namespace

std::string ConnectionName(const device::Topology& topology, size_t a,
                           size_t b) {
  if (a == b) return "X";
  const device::PairLinks& links = topology.Links(a, b);
  if (links.count > 0) return absl::StrCat("NV", links.count);
  return device::TopologyLevelName(topology.Level(a, b));
}

std::string FormatTopoMatrix(const device::Topology& topology) {
  const size_t n = topology.size();
  std::vector<std::string> header = {""};
  for (const auto& gpu : topology.gpus()) header.push_back(GpuLabel(gpu));
  header.push_back("CPU Affinity");
  header.push_back("NUMA Affinity");
  Table table(std::move(header), 3);
  for (size_t a = 0; a < n; ++a) {
    const device::TopologyGpu& gpu = topology.gpu(a);
    std::vector<std::string> row = {GpuLabel(gpu)};
    for (size_t b = 0; b < n; ++b)
      row.push_back(ConnectionName(topology, a, b));
    row.push_back(FormatCpuList(gpu.cpu_affinity));
    row.push_back(NumaName(gpu));
    table.AddRow(std::move(row));
  }
  return absl::StrCat(table.Render(), "\n", kLegend);
}

std::string FormatTopoJson(const device::Topology& topology) {
  const size_t n = topology.size();
  json gpus = json::array();
  json matrix = json::array();
  json pairs = json::array();
  for (size_t a = 0; a < n; ++a) {
    const device::TopologyGpu& gpu = topology.gpu(a);
    gpus.push_back(
        json{{"index", gpu.index},
             {"uuid", gpu.uuid},
             {"busId", gpu.bus_id},
             {"numaNode", gpu.numa_node ? json(*gpu.numa_node) : json(nullptr)},
             {"cpuAffinity", FormatCpuList(gpu.cpu_affinity)}});
    json row = json::array();
    for (size_t b = 0; b < n; ++b) {
      row.push_back(ConnectionName(topology, a, b));
      if (a != b) pairs.push_back(PairJson(topology, a, b));
    }
    matrix.push_back(std::move(row));
  }
  json doc{{"gpus", std::move(gpus)},
           {"matrix", std::move(matrix)},
           {"pairs", std::move(pairs)}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace gpulet::cli
