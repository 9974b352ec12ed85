// DynamicLibrary: NVML event sets (Xid and ECC notifications).
#include "src/gpu/nvml/dynamic_library.h"

namespace gpulet::nvml {

// Owns one nvmlEventSet_t; freed by the destructor. Borrows the library,
// which must outlive it (library.h: handles do not outlive the library).
class DynamicEventSet final : public EventSet {
 public:
  DynamicEventSet(const DynamicLibrary& library, nvmlEventSet_t set)
      : library_(library), set_(set) {}
  ~DynamicEventSet() override {
    if (library_.fn_.nvmlEventSetFree.fn != nullptr) {
      library_.fn_.nvmlEventSetFree.fn(set_);
    }
  }
  DynamicEventSet(const DynamicEventSet&) = delete;
  DynamicEventSet& operator=(const DynamicEventSet&) = delete;

  absl::Status Register(Device device, uint64_t event_types) override {
    return library_.Call(library_.fn_.nvmlDeviceRegisterEvents, device, device,
                         static_cast<unsigned long long>(event_types), set_);
  }

  // NVML_ERROR_TIMEOUT maps to DeadlineExceeded in nvml_status.cc.
  absl::StatusOr<Event> Wait(uint32_t timeout_ms) override {
    nvmlEventData_t data = {};
    absl::Status status = library_.Call(library_.fn_.nvmlEventSetWait_v2,
                                        nullptr, set_, &data, timeout_ms);
    if (!status.ok()) return status;
    return Event{data.device, data.eventType, data.eventData,
                 data.gpuInstanceId, data.computeInstanceId};
  }

 private:
  const DynamicLibrary& library_;
  const nvmlEventSet_t set_;
};

absl::StatusOr<EventSetPtr> DynamicLibrary::EventSetCreate() {
  nvmlEventSet_t set = nullptr;
  absl::Status status = Call(fn_.nvmlEventSetCreate, nullptr, &set);
  if (!status.ok()) return status;
  return std::make_unique<DynamicEventSet>(*this, set);
}

absl::StatusOr<uint64_t> DynamicLibrary::DeviceGetSupportedEventTypes(
    Device device) {
  unsigned long long types = 0;
  absl::Status status =
      Call(fn_.nvmlDeviceGetSupportedEventTypes, device, device, &types);
  if (!status.ok()) return status;
  return static_cast<uint64_t>(types);
}

}  // namespace gpulet::nvml
