#include "sim/event_queue.h"

namespace gpulet::sim {

EventQueue::EventQueue(size_t capacity)
    : capacity_(capacity == 0 ? 1 : capacity) {}

bool EventQueue::Push(const SimEvent& event) {
  bool dropped = false;
  if (events_.size() >= capacity_) {
    events_.pop_front();
    ++dropped_;
    dropped = true;
  }
  events_.push_back(event);
  return dropped;
}

std::optional<SimEvent> EventQueue::Pop() {
  if (events_.empty()) return std::nullopt;
  SimEvent event = events_.front();
  events_.pop_front();
  return event;
}

void EventQueue::Clear() { events_.clear(); }

}  // namespace gpulet::sim
