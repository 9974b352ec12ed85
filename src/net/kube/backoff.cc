#include "src/net/kube/backoff.h"

#include <algorithm>
#include <random>

namespace gpulet::kube {

double DefaultRandom() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

Backoff::Backoff(BackoffPolicy policy, RandomFn random)
    : policy_(policy), random_(random ? std::move(random) : DefaultRandom) {}

absl::Duration Backoff::Next() {
  absl::Duration base = policy_.initial;
  for (int i = 0; i < failures_ && base < policy_.max; ++i) base *= 2;
  base = std::min(base, policy_.max);
  ++failures_;
  const double r = std::clamp(random_(), 0.0, 1.0);
  return base + base * (policy_.jitter * r);
}

}  // namespace gpulet::kube
