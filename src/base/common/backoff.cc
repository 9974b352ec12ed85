#include "src/base/common/backoff.h"

#include <algorithm>
#include <random>
#include <utility>

namespace gpulet::common {

double DefaultRandom() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

Backoff::Backoff(BackoffPolicy policy, RandomFn random)
    : policy_(policy), random_(random ? std::move(random) : DefaultRandom) {}

absl::Duration Backoff::Next() {
  absl::Duration delay = policy_.initial;
  // Stop doubling once capped so long outages cannot overflow.
  for (int i = 0; i < failures_ && delay < policy_.max; ++i) delay *= 2;
  delay = std::min(delay, policy_.max);
  ++failures_;
  if (policy_.jitter <= 0) return delay;
  const double r = std::clamp(random_(), 0.0, 1.0);
  return delay + delay * (policy_.jitter * r);
}

}  // namespace gpulet::common
