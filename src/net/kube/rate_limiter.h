// RateLimiter: the client's request budget, a token bucket of `burst`
// tokens refilled at `qps` per second (client-go's QPS and Burst; its
// defaults are 5 and 10). Each request takes a token; when none is left the
// request waits for its turn. Waits are reservations: callers that arrive
// together are spaced 1/qps apart rather than all waking at once.
//
// The limiter only computes waits from its Clock; the client sleeps them
// (common::Clock::Sleep), so tests check the schedule with a FakeClock.
//
// Thread safety: Reserve() may be called from any thread.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/base/common/clock.h"

namespace gpulet::kube {

class RateLimiter {
 public:
  // qps <= 0 disables limiting; a burst below 1 counts as 1.
  // REQUIRES: `clock` outlives the limiter.
  RateLimiter(double qps, int burst, const common::Clock& clock);

  // Takes a token and returns how long the caller waits before using it
  // (zero when one was available).
  absl::Duration Reserve();

 private:
  const double qps_;
  const double burst_;
  const common::Clock& clock_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);  // negative: reserved ahead
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::kube
