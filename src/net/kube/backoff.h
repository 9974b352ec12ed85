// Backoff: delays between retries of a failed API request or watch:
// `initial`, doubling up to `max`, each stretched by a random factor in
// [1, 1 + jitter) so that many nodes retrying against one API server spread
// out (client-go's wait.Backoff with Jitter). A value, not a timer.
//
// Thread safety: a plain value; not shared between threads.
#pragma once

#include <functional>

#include "absl/time/time.h"

namespace gpulet::kube {

struct BackoffPolicy {
  absl::Duration initial = absl::Milliseconds(250);
  absl::Duration max = absl::Seconds(30);
  double jitter = 0.5;
};

// Returns a number in [0, 1); the default draws from a per-thread engine.
using RandomFn = std::function<double()>;
double DefaultRandom();

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy = {}, RandomFn random = nullptr);

  // The delay before the next attempt.
  absl::Duration Next();
  // After a success: the next failure waits about `initial` again.
  void Reset() { failures_ = 0; }

 private:
  BackoffPolicy policy_;
  RandomFn random_;
  int failures_ = 0;
};

}  // namespace gpulet::kube
