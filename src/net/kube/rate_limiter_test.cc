#include "src/net/kube/rate_limiter.h"

#include "gtest/gtest.h"

namespace gpulet::kube {
namespace {

TEST(RateLimiterTest, BurstThenOneTokenPerInterval) {
  common::FakeClock clock;
  RateLimiter limiter(/*qps=*/2, /*burst=*/3, clock);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(limiter.Reserve(), absl::ZeroDuration());
  }
  // Callers arriving together are spaced out, not woken at once.
  EXPECT_EQ(limiter.Reserve(), absl::Milliseconds(500));
  EXPECT_EQ(limiter.Reserve(), absl::Milliseconds(1000));
  clock.Advance(absl::Milliseconds(1000));
  EXPECT_EQ(limiter.Reserve(), absl::Milliseconds(500));
  // A long quiet period refills only up to the burst.
  clock.Advance(absl::Hours(1));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(limiter.Reserve(), absl::ZeroDuration());
  }
  EXPECT_GT(limiter.Reserve(), absl::ZeroDuration());
}

TEST(RateLimiterTest, ZeroQpsIsUnlimited) {
  common::FakeClock clock;
  RateLimiter limiter(0, 1, clock);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(limiter.Reserve(), absl::ZeroDuration());
  }
}

}  // namespace
}  // namespace gpulet::kube
