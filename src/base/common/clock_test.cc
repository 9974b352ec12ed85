#include "src/base/common/clock.h"

#include <time.h>

#include <atomic>
#include <thread>

#include "gmock/gmock.h"
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

TEST(RealClockTest, WallNowIsTheWallClock) {
  const absl::Time before = absl::Now();
  const absl::Time wall = RealClock::Get().WallNow();
  const absl::Time after = absl::Now();
  EXPECT_LE(before, wall);
  EXPECT_LE(wall, after);
}

TEST(RealClockTest, StopEndsASleepEarly) {
  std::stop_source stop;
  std::atomic<bool> result{true};
  std::jthread sleeper([&] {
    result = RealClock::Get().Sleep(absl::Hours(1), stop.get_token());
  });
  stop.request_stop();
  sleeper.join();  // returns long before the hour is up
  EXPECT_FALSE(result);
  EXPECT_FALSE(RealClock::Get().Sleep(absl::Hours(1), stop.get_token()));
}

TEST(RealClockTest, NothingToSleepFor) {
  EXPECT_TRUE(RealClock::Get().Sleep(absl::ZeroDuration(), {}));
  EXPECT_TRUE(RealClock::Get().Sleep(absl::Microseconds(1), {}));
}

TEST(FakeClockTest, SleepAdvancesTheClockAndIsRecorded) {
  FakeClock clock;
  EXPECT_TRUE(clock.Sleep(absl::Seconds(3), {}));
  EXPECT_TRUE(clock.Sleep(absl::ZeroDuration(), {}));
  EXPECT_EQ(clock.Now(), absl::UnixEpoch() + absl::Seconds(3));
  EXPECT_EQ(clock.WallNow(), clock.Now());
  EXPECT_THAT(clock.sleeps(), ::testing::ElementsAre(absl::Seconds(3)));
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(clock.Sleep(absl::Seconds(1), stop.get_token()));
  EXPECT_EQ(clock.Now(), absl::UnixEpoch() + absl::Seconds(3));
}

}  // namespace
}  // namespace gpulet::common
