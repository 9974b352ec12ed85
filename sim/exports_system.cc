// Exported NVML entry points: initialisation, error strings, system queries
// and device enumeration.
#include <cstring>
#include <optional>

#include "sim/nvml_values.h"
#include "sim/sim_runtime.h"
#include "src/gpu/nvml/nvml_api.h"

using gpulet::sim::CopyString;
using gpulet::sim::DevicePosition;
using gpulet::sim::Gpu;
using gpulet::sim::HandleTable;
using gpulet::sim::Machine;
using gpulet::sim::ParsePciBusId;
using gpulet::sim::PciAddress;
using gpulet::sim::State;

namespace {

nvmlReturn_t InitWith(unsigned int flags) {
  bool first = false;
  nvmlReturn_t result = State().Init(flags, &first);
  if (result == NVML_SUCCESS && first) gpulet::sim::ConfigureControlChannel();
  return result;
}

nvmlReturn_t HandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return State().LookupDevice(
      [&](const Machine& m, DevicePosition* position) {
        if (index >= m.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
        position->gpu = static_cast<int>(index);
        return NVML_SUCCESS;
      },
      device);
}

nvmlReturn_t HandleByBusId(const char* bus_id, nvmlDevice_t* device) {
  return State().LookupDevice(
      [&](const Machine& m, DevicePosition* position) {
        if (bus_id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        // Text that is no bus ID names no device either.
        std::optional<PciAddress> wanted = ParsePciBusId(bus_id);
        if (!wanted.has_value()) return NVML_ERROR_NOT_FOUND;
        for (size_t i = 0; i < m.gpus.size(); ++i) {
          if (ParsePciBusId(m.gpus[i].bus_id) == wanted) {
            position->gpu = static_cast<int>(i);
            return NVML_SUCCESS;
          }
        }
        return NVML_ERROR_NOT_FOUND;
      },
      device);
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2(void) { return InitWith(0); }
nvmlReturn_t nvmlInit(void) { return InitWith(0); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { return InitWith(flags); }
nvmlReturn_t nvmlShutdown(void) { return State().Shutdown(); }

const char* nvmlErrorString(nvmlReturn_t result) {
  // Callers pass any integer; copy the bits instead of reading them as an
  // enumeration value that may be out of range.
  unsigned int code = 0;
  std::memcpy(&code, &result, sizeof(code));
  return State().ErrorString(code);
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return State().WithMachine([&](const Machine& m, HandleTable&) {
    return CopyString(m.driver_version, version, length);
  });
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return State().WithMachine([&](const Machine& m, HandleTable&) {
    return CopyString(m.nvml_version, version, length);
  });
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  return State().WithMachine([&](const Machine& m, HandleTable&) {
    if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = m.cuda_driver_version;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return State().WithMachine([&](const Machine& m, HandleTable&) {
    if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = static_cast<unsigned int>(m.gpus.size());
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return nvmlDeviceGetCount_v2(deviceCount);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                           nvmlDevice_t* device) {
  return HandleByIndex(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index,
                                        nvmlDevice_t* device) {
  return HandleByIndex(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  return State().LookupDevice(
      [&](const Machine& m, DevicePosition* position) {
        if (uuid == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        for (size_t i = 0; i < m.gpus.size(); ++i) {
          const Gpu& gpu = m.gpus[i];
          if (gpu.uuid == uuid) {
            position->gpu = static_cast<int>(i);
            return NVML_SUCCESS;
          }
          if (!gpu.mig_enabled) continue;
          for (size_t j = 0; j < gpu.mig_devices.size(); ++j) {
            if (gpu.mig_devices[j].uuid == uuid) {
              *position =
                  DevicePosition{static_cast<int>(i), static_cast<int>(j)};
              return NVML_SUCCESS;
            }
          }
        }
        return NVML_ERROR_NOT_FOUND;
      },
      device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId,
                                              nvmlDevice_t* device) {
  return HandleByBusId(pciBusId, device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId,
                                           nvmlDevice_t* device) {
  return HandleByBusId(pciBusId, device);
}

}  // extern "C"
