// EventQueue: the bounded FIFO behind one simulated nvmlEventSet_t.
//
// Memory stays bounded however fast events arrive (the control channel can
// inject thousands per second): a queue holds at most `capacity` events, and
// when a new event arrives at a full queue the OLDEST queued event is
// discarded and counted in dropped(). Dropping the oldest keeps the most
// recent state of the GPUs visible to a slow reader, which is what a health
// monitor needs after a burst.
//
// Thread safety: none; SimState guards each queue with its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

namespace gpulet::sim {

// Events one set can hold before it starts dropping the oldest.
inline constexpr size_t kEventQueueCapacity = 1024;

// An event as queued: the GPU is an index, turned into the GPU's handle when
// nvmlEventSetWait delivers it.
struct SimEvent {
  int gpu = 0;
  unsigned long long type = 0;  // one nvmlEventType* bit
  unsigned long long data = 0;  // the Xid for nvmlEventTypeXidCriticalError
  unsigned int gpu_instance_id = 0xFFFFFFFF;
  unsigned int compute_instance_id = 0xFFFFFFFF;
};

class EventQueue {
 public:
  explicit EventQueue(size_t capacity = kEventQueueCapacity);

  // Appends `event`; returns true if the oldest event was dropped for it.
  bool Push(const SimEvent& event);
  std::optional<SimEvent> Pop();
  void Clear();

  size_t size() const { return events_.size(); }
  bool empty() const { return events_.empty(); }
  size_t capacity() const { return capacity_; }
  uint64_t dropped() const { return dropped_; }

 private:
  size_t capacity_;
  std::deque<SimEvent> events_;
  uint64_t dropped_ = 0;
};

}  // namespace gpulet::sim
