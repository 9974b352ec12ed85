// Exported NVML entry points: device identity, PCI, memory and architecture.
// MIG device handles answer with their own UUID, name and memory and with
// their parent's PCI address, compute capability, brand and architecture.
#include <cstring>
#include <optional>

#include "sim/machine_queries.h"
#include "sim/nvml_values.h"
#include "sim/sim_runtime.h"
#include "src/gpu/nvml/nvml_api.h"

using gpulet::sim::CopyString;
using gpulet::sim::DeviceView;
using gpulet::sim::FindGiProfile;
using gpulet::sim::Gpu;
using gpulet::sim::GpuInstanceProfile;
using gpulet::sim::PciAddress;
using gpulet::sim::State;
using gpulet::sim::WithGpu;

namespace {

constexpr unsigned long long kMiB = 1024ULL * 1024ULL;

// Machines come from a validated parser, but a malformed bus ID must still
// not produce garbage: it reads as 0000:00:00.0.
PciAddress AddressOf(const Gpu& gpu) {
  std::optional<PciAddress> address = gpulet::sim::ParsePciBusId(gpu.bus_id);
  return address.value_or(PciAddress{});
}

struct MemoryFigures {
  unsigned long long total = 0, reserved = 0, free = 0, used = 0;
};

MemoryFigures MemoryOf(const DeviceView& d) {
  MemoryFigures m;
  if (d.mig != nullptr) {
    const GpuInstanceProfile* gi =
        FindGiProfile(d.gpu, d.mig->gpu_instance_profile_id);
    m.total = gi ? gi->memory_size_mb * kMiB : 0;
    m.free = m.total;
    return m;
  }
  m.total = d.gpu.memory_total;
  m.reserved = d.gpu.memory_reserved;
  m.used = d.gpu.memory_used < m.total ? d.gpu.memory_used : m.total;
  m.free = m.total - m.used;
  return m;
}

nvmlReturn_t PciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci, bool legacy) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (legacy) {
      gpulet::sim::FillLegacyPciInfo(AddressOf(d.gpu), d.gpu.pci_device_id,
                                     d.gpu.pci_subsystem_id, pci);
    } else {
      gpulet::sim::FillPciInfo(AddressOf(d.gpu), d.gpu.pci_device_id,
                               d.gpu.pci_subsystem_id, pci);
    }
    return NVML_SUCCESS;
  });
}

// The fields every fabric struct version shares.
template <typename Raw>
void FillFabric(const gpulet::sim::GpuFabric& fabric, Raw* raw) {
  std::memcpy(raw->clusterUuid, fabric.cluster_uuid.data(),
              sizeof(raw->clusterUuid));
  raw->status = fabric.status;
  raw->cliqueId = fabric.clique_id;
  raw->state = fabric.state;
}

// A GPU outside any fabric answers NOT_SUPPORTED, as pre-Hopper GPUs do.
template <typename Fill>
nvmlReturn_t FabricInfo(nvmlDevice_t device, const void* info, Fill fill) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.gpu.fabric) return NVML_ERROR_NOT_SUPPORTED;
    return fill(*d.gpu.fabric);
  });
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return WithGpu(device, [&](const DeviceView& d) {
    if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *index = static_cast<unsigned int>(d.gpu_index);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                               unsigned int length) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    return CopyString(d.mig ? d.mig->uuid : d.gpu.uuid, uuid, length);
  });
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                               unsigned int length) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (d.mig == nullptr) return CopyString(d.gpu.name, name, length);
    return CopyString(gpulet::sim::MigDeviceName(d.gpu, *d.mig), name, length);
  });
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial,
                                 unsigned int length) {
  return WithGpu(device, [&](const DeviceView& d) {
    if (serial == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.gpu.serial.empty()) return NVML_ERROR_NOT_SUPPORTED;
    return CopyString(d.gpu.serial, serial, length);
  });
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device,
                                      unsigned int* minorNumber) {
  return WithGpu(device, [&](const DeviceView& d) {
    if (minorNumber == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minorNumber = d.gpu.minor;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return PciInfo(device, pci, /*legacy=*/false);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return PciInfo(device, pci, /*legacy=*/false);
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return PciInfo(device, pci, /*legacy=*/true);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                     nvmlMemory_t* memory) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    MemoryFigures m = MemoryOf(d);
    *memory = nvmlMemory_t{m.total, m.free, m.used};
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                        nvmlMemory_v2_t* memory) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2) {
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    MemoryFigures m = MemoryOf(d);
    memory->total = m.total;
    memory->reserved = m.reserved;
    memory->free = m.free;
    memory->used = m.used;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                int* minor) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (major == nullptr || minor == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    *major = d.gpu.cc_major;
    *minor = d.gpu.cc_minor;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t* type) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *type = d.gpu.brand;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device,
                                       nvmlDeviceArchitecture_t* arch) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (arch == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *arch = d.gpu.architecture;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (node == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.gpu.numa_node < 0) return NVML_ERROR_NOT_SUPPORTED;
    *node = static_cast<unsigned int>(d.gpu.numa_node);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device,
                                        nvmlGpuFabricInfo_t* gpuFabricInfo) {
  return FabricInfo(device, gpuFabricInfo,
                    [&](const gpulet::sim::GpuFabric& fabric) {
                      FillFabric(fabric, gpuFabricInfo);
                      return NVML_SUCCESS;
                    });
}

// Writes only the layout the caller's `version` names: a v2 caller's buffer
// is shorter than v3.
nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device,
                                         nvmlGpuFabricInfoV_t* gpuFabricInfo) {
  return FabricInfo(
      device, gpuFabricInfo, [&](const gpulet::sim::GpuFabric& fabric) {
        if (gpuFabricInfo->version == nvmlGpuFabricInfo_v3) {
          FillFabric(fabric, gpuFabricInfo);
          gpuFabricInfo->healthMask = fabric.health_mask;
          gpuFabricInfo->healthSummary = fabric.health_summary;
          return NVML_SUCCESS;
        }
        if (gpuFabricInfo->version == nvmlGpuFabricInfo_v2) {
          auto* v2 = reinterpret_cast<nvmlGpuFabricInfo_v2_t*>(gpuFabricInfo);
          FillFabric(fabric, v2);
          v2->healthMask = fabric.health_mask;
          return NVML_SUCCESS;
        }
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
      });
}

}  // extern "C"
