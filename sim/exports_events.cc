// Exported NVML entry points: event sets. The semantics (bounded queues,
// what a freed or shut-down set returns) are documented in sim_state.h and
// event_queue.h.
#include <cstddef>
#include <cstring>

#include "sim/sim_runtime.h"
#include "src/gpu/nvml/nvml_api.h"

using gpulet::sim::DeviceView;
using gpulet::sim::State;

extern "C" {

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  return State().CreateEventSet(set);
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                              unsigned long long* eventTypes) {
  return State().WithDevice(device, [&](const DeviceView& d) {
    if (eventTypes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // Events are registered on the parent GPU.
    if (d.mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *eventTypes = d.gpu.supported_events;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                      unsigned long long eventTypes,
                                      nvmlEventSet_t set) {
  return State().RegisterEvents(device, eventTypes, set);
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms) {
  return State().WaitEvent(set, timeoutms, data);
}

// The v1 nvmlEventData_t ended before the GPU/compute instance ids.
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data,
                              unsigned int timeoutms) {
  if (data == nullptr) return State().WaitEvent(set, timeoutms, nullptr);
  nvmlEventData_t full{};
  nvmlReturn_t result = State().WaitEvent(set, timeoutms, &full);
  if (result == NVML_SUCCESS) {
    std::memcpy(data, &full, offsetof(nvmlEventData_t, gpuInstanceId));
  }
  return result;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return State().FreeEventSet(set);
}

}  // extern "C"
