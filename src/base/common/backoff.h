// Backoff: the delays between retries of a failed operation (a plugin
// restart or registration, an API request or watch, a publish): `initial`,
// doubling, capped at `max` (100 ms, 200 ms, ..., 5 s, 5 s, ... by
// default). With `jitter` > 0 each delay is stretched by a random factor in
// [1, 1 + jitter), so that many nodes retrying against one API server spread
// out (client-go's wait.Backoff with Jitter). A value, not a timer: the
// caller turns the delay into a wait of its own (a poll() timeout, a
// Clock::Sleep), so a stop interrupts any wait at once.
//
// Thread safety: a plain value; not shared between threads.
#pragma once

#include <functional>

#include "absl/time/time.h"

namespace gpulet::common {

struct BackoffPolicy {
  absl::Duration initial = absl::Milliseconds(100);
  absl::Duration max = absl::Seconds(5);
  double jitter = 0;  // 0: every delay exactly as doubled
};

// Returns a number in [0, 1); the default draws from a per-thread engine.
using RandomFn = std::function<double()>;
double DefaultRandom();

class Backoff {
 public:
  // `random` is the jitter source (read only when policy.jitter > 0);
  // nullptr means DefaultRandom.
  explicit Backoff(BackoffPolicy policy = {}, RandomFn random = nullptr);

  // The delay before the next attempt; each call doubles the following one
  // until the cap.
  absl::Duration Next();
  // After a success: the next failure waits about `initial` again.
  void Reset() { failures_ = 0; }
  // Delays handed out since the last Reset().
  int failures() const { return failures_; }

 private:
  BackoffPolicy policy_;
  RandomFn random_;
  int failures_ = 0;
};

}  // namespace gpulet::common
