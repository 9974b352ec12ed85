#include "src/gpu/device/topology.h"

#include <algorithm>
#include <utility>

#include "src/base/common/status_macros.h"
#include "src/gpu/device/nvml_error_kind.h"
#include "src/gpu/device/pci_address.h"

namespace gpulet::device {
namespace {

// An NVLink that cannot be queried (past the GPU's last link, or NVLink
// absent altogether) is simply not there.
bool LinkAbsent(const absl::Status& status) {
  return IsNvmlUnsupported(status) || IsNvmlInvalidArgument(status) ||
         IsNvmlNotFound(status);
}

absl::StatusOr<std::optional<NvLinkEnd>> ReadLink(
    nvml::Library& lib, nvml::Device handle, unsigned link,
    const std::vector<std::string>& gpu_bus_ids) {
  absl::StatusOr<bool> active = lib.DeviceGetNvLinkState(handle, link);
  if (!active.ok() && LinkAbsent(active.status())) return std::nullopt;
  if (!active.ok()) return active.status();
  if (!*active) return std::nullopt;

  absl::StatusOr<nvml::PciInfo> remote =
      lib.DeviceGetNvLinkRemotePciInfo(handle, link);
  if (!remote.ok() && LinkAbsent(remote.status())) return std::nullopt;
  if (!remote.ok()) return remote.status();
  NvLinkEnd end;
  end.remote_bus_id = CanonicalBusId(remote->bus_id);
  absl::StatusOr<nvmlIntNvLinkDeviceType_t> type =
      lib.DeviceGetNvLinkRemoteDeviceType(handle, link);
  if (type.ok()) {
    end.remote_type = *type;
  } else if (IsNvmlUnsupported(type.status())) {
    // Older drivers cannot say; a remote end that is one of our GPUs is a GPU.
    bool is_gpu = std::find(gpu_bus_ids.begin(), gpu_bus_ids.end(),
                            end.remote_bus_id) != gpu_bus_ids.end();
    end.remote_type =
        is_gpu ? NVML_NVLINK_DEVICE_TYPE_GPU : NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  } else {
    return type.status();
  }
  return std::optional<NvLinkEnd>(std::move(end));
}

absl::StatusOr<GpuLinks> ReadLinks(nvml::Library& lib, nvml::Device handle,
                                   const std::string& bus_id,
                                   const std::vector<std::string>& all) {
  GpuLinks result;
  result.bus_id = bus_id;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    GPULET_ASSIGN_OR_RETURN(std::optional<NvLinkEnd> end,
                            ReadLink(lib, handle, link, all));
    if (end) result.links.push_back(*std::move(end));
  }
  return result;
}

absl::StatusOr<nvmlGpuP2PStatus_t> ReadP2P(nvml::Library& lib, nvml::Device a,
                                           nvml::Device b,
                                           nvmlGpuP2PCapsIndex_t index) {
  absl::StatusOr<nvmlGpuP2PStatus_t> status =
      lib.DeviceGetP2PStatus(a, b, index);
  if (!status.ok() && IsNvmlUnsupported(status.status())) {
    return NVML_P2P_STATUS_UNKNOWN;
  }
  return status;
}

absl::StatusOr<P2PStatus> ReadP2PStatus(nvml::Library& lib, nvml::Device a,
                                        nvml::Device b) {
  P2PStatus p2p;
  GPULET_ASSIGN_OR_RETURN(p2p.read,
                          ReadP2P(lib, a, b, NVML_P2P_CAPS_INDEX_READ));
  GPULET_ASSIGN_OR_RETURN(p2p.write,
                          ReadP2P(lib, a, b, NVML_P2P_CAPS_INDEX_WRITE));
  GPULET_ASSIGN_OR_RETURN(p2p.nvlink,
                          ReadP2P(lib, a, b, NVML_P2P_CAPS_INDEX_NVLINK));
  GPULET_ASSIGN_OR_RETURN(p2p.atomics,
                          ReadP2P(lib, a, b, NVML_P2P_CAPS_INDEX_ATOMICS));
  return p2p;
}

// Virtual machines often cannot report the PCIe path; assume the farthest.
absl::StatusOr<nvmlGpuTopologyLevel_t> ReadLevel(nvml::Library& lib,
                                                 nvml::Device a,
                                                 nvml::Device b) {
  absl::StatusOr<nvmlGpuTopologyLevel_t> level =
      lib.DeviceGetTopologyCommonAncestor(a, b);
  if (!level.ok() && IsNvmlUnsupported(level.status())) {
    return NVML_TOPOLOGY_SYSTEM;
  }
  return level;
}

// Levels and P2P for every ordered pair; links are filled in by the caller.
absl::StatusOr<std::vector<TopologyPair>> ReadPairs(
    nvml::Library& lib, const std::vector<nvml::Device>& handles) {
  const size_t n = handles.size();
  std::vector<TopologyPair> pairs(n * n);
  for (size_t a = 0; a < n; ++a) {
    pairs[a * n + a].level = NVML_TOPOLOGY_INTERNAL;
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      TopologyPair& pair = pairs[a * n + b];
      if (b > a) {
        GPULET_ASSIGN_OR_RETURN(pair.level,
                                ReadLevel(lib, handles[a], handles[b]));
      } else {
        pair.level = pairs[b * n + a].level;  // symmetric: ask NVML once
      }
      GPULET_ASSIGN_OR_RETURN(pair.p2p,
                              ReadP2PStatus(lib, handles[a], handles[b]));
    }
  }
  return pairs;
}

}  // namespace

Topology::Topology(std::vector<TopologyGpu> gpus,
                   std::vector<TopologyPair> pairs)
    : gpus_(std::move(gpus)), pairs_(std::move(pairs)) {}

absl::StatusOr<Topology> BuildTopology(nvml::Library& lib, const Node& node) {
  const size_t n = node.gpus.size();
  std::vector<nvml::Device> handles;
  std::vector<std::string> bus_ids;
  std::vector<TopologyGpu> gpus;
  for (const Gpu& gpu : node.gpus) {
    GPULET_ASSIGN_OR_RETURN(nvml::Device handle,
                            lib.DeviceGetHandleByIndex(gpu.index));
    handles.push_back(handle);
    bus_ids.push_back(CanonicalBusId(gpu.bus_id));
    gpus.push_back(TopologyGpu{gpu.index, gpu.uuid, gpu.bus_id, gpu.numa_node,
                               gpu.cpu_affinity});
  }
  std::vector<GpuLinks> links;
  for (size_t i = 0; i < n; ++i) {
    GPULET_ASSIGN_OR_RETURN(GpuLinks gpu_links,
                            ReadLinks(lib, handles[i], bus_ids[i], bus_ids));
    links.push_back(std::move(gpu_links));
  }
  GPULET_ASSIGN_OR_RETURN(std::vector<TopologyPair> pairs,
                          ReadPairs(lib, handles));
  std::vector<std::vector<PairLinks>> counts = CountNvLinks(links);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) pairs[a * n + b].links = counts[a][b];
  }
  return Topology(std::move(gpus), std::move(pairs));
}

const char* TopologyLevelName(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
      return "X";
    case NVML_TOPOLOGY_SINGLE:
      return "PIX";
    case NVML_TOPOLOGY_MULTIPLE:
      return "PXB";
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return "PHB";
    case NVML_TOPOLOGY_NODE:
      return "NODE";
    case NVML_TOPOLOGY_SYSTEM:
      return "SYS";
  }
  return "?";
}

const char* P2PStatusName(nvmlGpuP2PStatus_t status) {
  switch (status) {
    case NVML_P2P_STATUS_OK:
      return "OK";
    case NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED:
      return "chipset not supported";
    case NVML_P2P_STATUS_GPU_NOT_SUPPORTED:
      return "GPU not supported";
    case NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED:
      return "topology not supported";
    case NVML_P2P_STATUS_DISABLED_BY_REGKEY:
      return "disabled by regkey";
    case NVML_P2P_STATUS_NOT_SUPPORTED:
      return "not supported";
    case NVML_P2P_STATUS_UNKNOWN:
      break;
  }
  return "unknown";
}

}  // namespace gpulet::device
