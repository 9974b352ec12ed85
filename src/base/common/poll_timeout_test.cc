#include "src/base/common/poll_timeout.h"

#include "gtest/gtest.h"

namespace gpulet::common {
namespace {

TEST(PollTimeoutMs, InfiniteIsMinusOneAndPastIsZero) {
  EXPECT_EQ(PollTimeoutMs(absl::InfiniteDuration()), -1);
  EXPECT_EQ(PollTimeoutMs(absl::ZeroDuration()), 0);
  EXPECT_EQ(PollTimeoutMs(-absl::Seconds(3)), 0);
}

TEST(PollTimeoutMs, RoundsUpToWholeMillisecondsAndCaps) {
  EXPECT_EQ(PollTimeoutMs(absl::Microseconds(1)), 1);
  EXPECT_EQ(PollTimeoutMs(absl::Milliseconds(2)), 2);
  EXPECT_EQ(PollTimeoutMs(absl::Microseconds(2001)), 3);
  EXPECT_EQ(PollTimeoutMs(absl::Hours(30)), 3'600'000);
  EXPECT_EQ(PollTimeoutMs(absl::Minutes(5), absl::Seconds(60)), 60'000);
}

TEST(PollTimeoutUntil, MeasuresFromTheClock) {
  FakeClock clock;
  const absl::Time deadline = clock.Now() + absl::Milliseconds(1500);
  EXPECT_EQ(PollTimeoutUntil(deadline, clock), 1500);
  clock.Advance(absl::Microseconds(1'499'500));
  EXPECT_EQ(PollTimeoutUntil(deadline, clock), 1);
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(PollTimeoutUntil(deadline, clock), 0);
  EXPECT_EQ(PollTimeoutUntil(absl::InfiniteFuture(), clock), -1);
}

}  // namespace
}  // namespace gpulet::common
