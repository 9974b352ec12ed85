// Backoff: the delays between retries of a failed plugin restart or
// registration: `initial`, doubling, capped at `max` (100 ms, 200 ms, ...,
// 5 s, 5 s, ...). A value, not a timer: the daemon's event loop turns the
// delay into a poll() timeout, so a signal interrupts any wait at once.
//
// Thread safety: a plain value; not shared between threads.
#pragma once

#include "absl/time/time.h"

namespace gpulet::daemon {

struct BackoffPolicy {
  absl::Duration initial = absl::Milliseconds(100);
  absl::Duration max = absl::Seconds(5);
};

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy = {}) : policy_(policy) {}

  // The delay before the next attempt; each call doubles the following one
  // until the cap.
  absl::Duration Next();
  // After a success: the next failure waits `initial` again.
  void Reset() { failures_ = 0; }
  // Delays handed out since the last Reset().
  int failures() const { return failures_; }

 private:
  BackoffPolicy policy_;
  int failures_ = 0;
};

}  // namespace gpulet::daemon
