// AsyncCall and LoopWaker: the state an asynchronous unary call (service.h)
// shares between the server's loop and whoever completes it. Internal to
// src/net/h2.
//
// The loop's Call and every UnaryResponder copy hold the AsyncCall by
// shared_ptr, so a completion that comes after the call ended, the
// connection closed or the server stopped finds the object still alive
// and is dropped: the first of Complete and Abandon wins. Completing wakes
// the loop through the LoopWaker (the server's eventfd), which the server
// closes before it closes the fd, so a late wake writes nowhere.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "src/net/h2/service.h"

namespace gpulet::h2 {

class LoopWaker {
 public:
  // Writes to `event_fd` (not owned) until Close().
  explicit LoopWaker(int event_fd) : fd_(event_fd) {}
  // Marks a completion ready and wakes the loop.
  void Wake();
  // The loop: whether a completion is ready since the last call.
  bool TakeReady() { return ready_.exchange(false); }
  // After this, Wake only marks; the fd may be closed.
  void Close();

 private:
  absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> ready_{false};
};

class AsyncCall {
 public:
  // `waker` may be null (a connection driven without a loop: the owner
  // collects completions itself).
  AsyncCall(Clock::time_point deadline, std::shared_ptr<LoopWaker> waker)
      : deadline_(deadline), waker_(std::move(waker)) {}

  // The first of Complete and Abandon wins; Complete wakes the loop.
  void Complete(absl::StatusOr<std::string> response);
  void Abandon();
  // The loop: the response, once, when completed.
  std::optional<absl::StatusOr<std::string>> Take();
  Clock::time_point deadline() const { return deadline_; }

 private:
  const Clock::time_point deadline_;
  const std::shared_ptr<LoopWaker> waker_;
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;  // completed or abandoned
  std::optional<absl::StatusOr<std::string>> response_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::h2
