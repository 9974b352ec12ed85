#include "src/net/kube/rate_limiter.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/net/kube/backoff.h"

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

TEST(BackoffTest, DoublesToTheCapWithJitter) {
  double r = 0;
  Backoff backoff({.initial = absl::Milliseconds(100),
                   .max = absl::Milliseconds(500),
                   .jitter = 0.5},
                  [&] { return r; });
  std::vector<absl::Duration> got;
  for (int i = 0; i < 5; ++i) got.push_back(backoff.Next());
  EXPECT_THAT(got, ::testing::ElementsAre(
                       absl::Milliseconds(100), absl::Milliseconds(200),
                       absl::Milliseconds(400), absl::Milliseconds(500),
                       absl::Milliseconds(500)));
  r = 0.5;
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(625));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(125));
}

TEST(BackoffTest, DefaultRandomStaysInRange) {
  Backoff backoff({.initial = absl::Seconds(1), .max = absl::Seconds(1),
                   .jitter = 0.5});
  for (int i = 0; i < 100; ++i) {
    absl::Duration d = backoff.Next();
    EXPECT_GE(d, absl::Seconds(1));
    EXPECT_LE(d, absl::Milliseconds(1500));
  }
}

}  // namespace
}  // namespace gpulet::kube
