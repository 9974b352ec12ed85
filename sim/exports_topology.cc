// Exported NVML entry points: PCIe topology, NVLinks, peer-to-peer status
// and CPU affinity. All of them describe physical GPUs: MIG device handles
// get NVML_ERROR_NOT_SUPPORTED.
#include <optional>
#include <string>

#include "sim/machine_queries.h"
#include "sim/nvml_values.h"
#include "sim/sim_runtime.h"
#include "src/gpu/nvml/nvml_api.h"

using gpulet::sim::DeviceView;
using gpulet::sim::Gpu;
using gpulet::sim::NvLink;
using gpulet::sim::PciAddress;
using gpulet::sim::State;
using gpulet::sim::WithGpu;

namespace {

template <typename Fn>
nvmlReturn_t WithGpuPair(nvmlDevice_t a, nvmlDevice_t b, Fn fn) {
  return State().WithDevicePair(
      a, b, [&](const DeviceView& da, const DeviceView& db) {
        if (da.mig != nullptr || db.mig != nullptr) {
          return NVML_ERROR_NOT_SUPPORTED;
        }
        return fn(da, db);
      });
}

// Runs fn(link) for an existing link of a full GPU.
template <typename Fn>
nvmlReturn_t WithLink(nvmlDevice_t device, unsigned int link, bool null_out,
                      Fn fn) {
  return WithGpu(device, [&](const DeviceView& d) {
    if (null_out || link >= NVML_NVLINK_MAX_LINKS) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (link >= d.gpu.nvlinks.size()) return NVML_ERROR_NOT_SUPPORTED;
    return fn(d, d.gpu.nvlinks[link]);
  });
}

nvmlReturn_t RemotePciInfo(nvmlDevice_t device, unsigned int link,
                           nvmlPciInfo_t* pci, bool legacy) {
  return WithLink(
      device, link, pci == nullptr, [&](const DeviceView& d, const NvLink& l) {
        const Gpu* peer = nullptr;
        if (l.remote_type == NVML_NVLINK_DEVICE_TYPE_GPU && l.peer_gpu >= 0 &&
            static_cast<size_t>(l.peer_gpu) < d.machine.gpus.size()) {
          peer = &d.machine.gpus[l.peer_gpu];
        }
        std::string bus_id = l.remote_bus_id;
        if (bus_id.empty() && peer != nullptr) bus_id = peer->bus_id;
        std::optional<PciAddress> address = gpulet::sim::ParsePciBusId(bus_id);
        if (!address.has_value()) return NVML_ERROR_NOT_SUPPORTED;
        uint32_t device_id = peer ? peer->pci_device_id : 0;
        uint32_t subsystem_id = peer ? peer->pci_subsystem_id : 0;
        if (legacy) {
          gpulet::sim::FillLegacyPciInfo(*address, device_id, subsystem_id,
                                         pci);
        } else {
          gpulet::sim::FillPciInfo(*address, device_id, subsystem_id, pci);
        }
        return NVML_SUCCESS;
      });
}

nvmlGpuP2PStatus_t P2PStatus(const DeviceView& a, const DeviceView& b,
                             nvmlGpuP2PCapsIndex_t index,
                             nvmlGpuTopologyLevel_t level) {
  bool nvlink = gpulet::sim::ShareNvLink(a.machine, a.gpu_index, b.gpu_index);
  switch (index) {
    case NVML_P2P_CAPS_INDEX_NVLINK:
    case NVML_P2P_CAPS_INDEX_ATOMICS:
      return nvlink ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
    default:  // READ, WRITE, PROP: over NVLink, or PCIe within one CPU
      return nvlink || level <= NVML_TOPOLOGY_NODE
                 ? NVML_P2P_STATUS_OK
                 : NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED;
  }
}

// The machine's common-ancestor matrix entry, if the matrix has it.
std::optional<nvmlGpuTopologyLevel_t> Level(const DeviceView& a,
                                            const DeviceView& b) {
  const auto& topology = a.machine.topology;
  if (static_cast<size_t>(a.gpu_index) >= topology.size() ||
      static_cast<size_t>(b.gpu_index) >= topology[a.gpu_index].size()) {
    return std::nullopt;
  }
  return topology[a.gpu_index][b.gpu_index];
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(
    nvmlDevice_t device1, nvmlDevice_t device2,
    nvmlGpuTopologyLevel_t* pathInfo) {
  return WithGpuPair(
      device1, device2, [&](const DeviceView& a, const DeviceView& b) {
        if (pathInfo == nullptr) {
          return NVML_ERROR_INVALID_ARGUMENT;
        }
        std::optional<nvmlGpuTopologyLevel_t> level = Level(a, b);
        if (!level.has_value()) return NVML_ERROR_UNKNOWN;
        *pathInfo = *level;
        return NVML_SUCCESS;
      });
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* isActive) {
  return WithLink(device, link, isActive == nullptr,
                  [&](const DeviceView&, const NvLink& l) {
                    *isActive =
                        l.active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
                    return NVML_SUCCESS;
                  });
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                 unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  return RemotePciInfo(device, link, pci, /*legacy=*/false);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device,
                                              unsigned int link,
                                              nvmlPciInfo_t* pci) {
  return RemotePciInfo(device, link, pci, /*legacy=*/true);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    nvmlDevice_t device, unsigned int link,
    nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType) {
  return WithLink(device, link, pNvLinkDeviceType == nullptr,
                  [&](const DeviceView&, const NvLink& l) {
                    *pNvLinkDeviceType = l.remote_type;
                    return NVML_SUCCESS;
                  });
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                    nvmlGpuP2PCapsIndex_t p2pIndex,
                                    nvmlGpuP2PStatus_t* p2pStatus) {
  return WithGpuPair(
      device1, device2, [&](const DeviceView& a, const DeviceView& b) {
        if (p2pStatus == nullptr ||
            static_cast<unsigned>(p2pIndex) >= NVML_P2P_CAPS_INDEX_UNKNOWN) {
          return NVML_ERROR_INVALID_ARGUMENT;
        }
        std::optional<nvmlGpuTopologyLevel_t> level = Level(a, b);
        if (!level.has_value()) return NVML_ERROR_UNKNOWN;
        *p2pStatus = P2PStatus(a, b, p2pIndex, *level);
        return NVML_SUCCESS;
      });
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device,
                                      unsigned int cpuSetSize,
                                      unsigned long* cpuSet) {
  return WithGpu(device, [&](const DeviceView& d) {
    if (cpuSet == nullptr || cpuSetSize == 0) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (d.gpu.cpu_affinity.empty()) return NVML_ERROR_NOT_SUPPORTED;
    gpulet::sim::FillCpuSet(d.gpu.cpu_affinity, cpuSetSize, cpuSet);
    return NVML_SUCCESS;
  });
}

}  // extern "C"
