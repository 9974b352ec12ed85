#include "src/net/kube/rate_limiter.h"

#include <algorithm>

namespace gpulet::kube {

RateLimiter::RateLimiter(double qps, int burst, const common::Clock& clock)
    : qps_(qps),
      burst_(std::max(burst, 1)),
      clock_(clock),
      tokens_(burst_),
      last_(clock.Now()) {}

absl::Duration RateLimiter::Reserve() {
  if (qps_ <= 0) return absl::ZeroDuration();
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  if (now > last_) {
    tokens_ =
        std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return absl::ZeroDuration();
  return absl::Seconds(-tokens_ / qps_);
}

}  // namespace gpulet::kube
