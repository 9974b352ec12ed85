#include "src/base/common/clock.h"

#include <time.h>

#include "gtest/gtest.h"

namespace gpulet::common {
namespace {

absl::Time Monotonic() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return absl::UnixEpoch() + absl::DurationFromTimespec(ts);
}

// Deadlines measured on the real clock must not move with the wall clock:
// RealClock reads CLOCK_MONOTONIC, whatever date the system believes it is.
TEST(RealClockTest, ReadsTheMonotonicClockNotTheWallClock) {
  const absl::Time before = Monotonic();
  const absl::Time now = RealClock::Get().Now();
  const absl::Time after = Monotonic();
  EXPECT_LE(before, now);
  EXPECT_LE(now, after);
}

TEST(FakeClockTest, MovesOnlyWhenTold) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  clock.Advance(absl::Minutes(5));
  EXPECT_EQ(clock.Now() - start, absl::Minutes(5));
  clock.Set(start);
  EXPECT_EQ(clock.Now(), start);
}

}  // namespace
}  // namespace gpulet::common
