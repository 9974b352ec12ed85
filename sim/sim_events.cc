// SimState's event sets: creation, registration, delivery, waiting, freeing.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "absl/time/time.h"
#include "sim/sim_state.h"
#include "src/base/common/clock.h"

namespace gpulet::sim {

void SimState::EventSetObject::Ring() const {
  const uint64_t one = 1;
  (void)!::write(doorbell.get(), &one, sizeof(one));
}

void SimState::EventSetObject::Quiet() const {
  uint64_t count;
  (void)!::read(doorbell.get(), &count, sizeof(count));
}

SimState::EventSetObject* SimState::FindEventSet(nvmlEventSet_t set) {
  auto it = event_sets_.find(set);
  return it == event_sets_.end() ? nullptr : it->second.get();
}

nvmlReturn_t SimState::CreateEventSet(nvmlEventSet_t* set) {
  absl::MutexLock lock(&mu_);
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  common::UniqueFd doorbell(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!doorbell.valid()) return NVML_ERROR_UNKNOWN;
  auto object = std::make_shared<EventSetObject>(std::move(doorbell));
  // The opaque nvmlEventSet_st is never defined: the handle is the object's
  // address, looked up in event_sets_ before any use.
  *set = reinterpret_cast<nvmlEventSet_t>(object.get());
  event_sets_.emplace(object.get(), std::move(object));
  return NVML_SUCCESS;
}

nvmlReturn_t SimState::RegisterEvents(nvmlDevice_t device,
                                      unsigned long long types,
                                      nvmlEventSet_t set) {
  absl::MutexLock lock(&mu_);
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  int gpu = 0;
  const MigDevice* mig = nullptr;
  nvmlReturn_t result = ResolveDevice(device, &gpu, &mig);
  EventSetObject* object = FindEventSet(set);
  if (result == NVML_ERROR_INVALID_ARGUMENT || object == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (result != NVML_SUCCESS) return result;
  // Events are registered on the parent GPU; MIG-scoped events carry the
  // GPU/compute instance ids in nvmlEventData_t.
  if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
  if ((types & ~machine_->gpus[gpu].supported_events) != 0) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  object->registrations[gpu] |= types;
  return NVML_SUCCESS;
}

std::optional<nvmlReturn_t> SimState::TakeEvent(
    nvmlEventSet_t set, nvmlEventData_t* data, absl::Time deadline,
    std::shared_ptr<EventSetObject>& object) {
  if (object == nullptr) {
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    auto it = event_sets_.find(set);
    if (it == event_sets_.end() || data == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    object = it->second;
  }
  if (object->freed) {
    return init_count_ == 0 ? NVML_ERROR_UNINITIALIZED
                            : NVML_ERROR_INVALID_ARGUMENT;
  }
  if (wait_error_remaining_ > 0) {
    --wait_error_remaining_;
    ++counters_.wait_errors_returned;
    return wait_error_code_;
  }
  if (std::optional<SimEvent> event = object->queue.Pop()) {
    data->device = handles_.Gpu(event->gpu);
    data->eventType = event->type;
    data->eventData = event->data;
    data->gpuInstanceId = event->gpu_instance_id;
    data->computeInstanceId = event->compute_instance_id;
    ++counters_.events_delivered;
    return NVML_SUCCESS;
  }
  if (common::RealClock::Get().Now() >= deadline) return NVML_ERROR_TIMEOUT;
  return std::nullopt;
}

nvmlReturn_t SimState::WaitEvent(nvmlEventSet_t set, unsigned int timeout_ms,
                                 nvmlEventData_t* data) {
  // Held across the waits: the set may be freed (and erased) meanwhile.
  std::shared_ptr<EventSetObject> object;
  const common::Clock& clock = common::RealClock::Get();
  const absl::Time deadline = clock.Now() + absl::Milliseconds(timeout_ms);
  std::optional<std::multiset<unsigned int>::iterator> blocked;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      std::optional<nvmlReturn_t> result =
          TakeEvent(set, data, deadline, object);
      if (result.has_value()) {
        if (blocked.has_value()) blocked_waits_.erase(*blocked);
        return *result;
      }
      if (!blocked.has_value()) blocked = blocked_waits_.insert(timeout_ms);
      // Nothing to do: every later reason to look again rings under mu_.
      object->Quiet();
    }
    const int64_t left_ms = absl::ToInt64Milliseconds(
        absl::Ceil(deadline - clock.Now(), absl::Milliseconds(1)));
    pollfd pfd{object->doorbell.get(), POLLIN, 0};
    const int polled = ::poll(
        &pfd, 1, static_cast<int>(std::clamp<int64_t>(left_ms, 0, INT_MAX)));
    // NVML documents that the wait returns early, with NVML_ERROR_TIMEOUT,
    // when an interrupt arrives; gpulet's health monitor relies on it to
    // end a long wait when it stops.
    if (polled < 0 && errno == EINTR) {
      absl::MutexLock lock(&mu_);
      blocked_waits_.erase(*blocked);
      ++counters_.waits_interrupted;
      return NVML_ERROR_TIMEOUT;
    }
  }
}

nvmlReturn_t SimState::FreeEventSet(nvmlEventSet_t set) {
  absl::MutexLock lock(&mu_);
  if (!initialized()) return NVML_ERROR_UNINITIALIZED;
  auto it = event_sets_.find(set);
  if (it == event_sets_.end()) return NVML_ERROR_INVALID_ARGUMENT;
  it->second->freed = true;
  it->second->Ring();
  event_sets_.erase(it);
  return NVML_SUCCESS;
}

void SimState::FreeAllEventSets() {
  for (auto& [pointer, object] : event_sets_) {
    object->freed = true;
    object->Ring();
  }
  event_sets_.clear();
}

void SimState::WakeAllWaiters() {
  for (auto& [pointer, object] : event_sets_) object->Ring();
}

void SimState::Deliver(const SimEvent& event) {
  ++counters_.events_injected;
  bool routed = false;
  for (auto& [pointer, object] : event_sets_) {
    auto registration = object->registrations.find(event.gpu);
    if (registration == object->registrations.end() ||
        (registration->second & event.type) == 0) {
      continue;
    }
    routed = true;
    ++counters_.events_queued;
    if (object->queue.Push(event)) ++counters_.events_dropped;
    object->Ring();
  }
  if (!routed) ++counters_.events_unrouted;
}

}  // namespace gpulet::sim
