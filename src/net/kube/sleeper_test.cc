#include "src/net/kube/sleeper.h"

#include <atomic>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::kube {
namespace {

TEST(RealSleeperTest, StopEndsAWaitEarly) {
  std::stop_source stop;
  std::atomic<bool> result{true};
  std::jthread sleeper([&] {
    result = RealSleeper::Get().Sleep(absl::Hours(1), stop.get_token());
  });
  stop.request_stop();
  sleeper.join();  // returns long before the hour is up
  EXPECT_FALSE(result);
  EXPECT_FALSE(RealSleeper::Get().Sleep(absl::Hours(1), stop.get_token()));
}

TEST(RealSleeperTest, NothingToWaitFor) {
  EXPECT_TRUE(RealSleeper::Get().Sleep(absl::ZeroDuration(), {}));
  EXPECT_TRUE(RealSleeper::Get().Sleep(absl::Microseconds(1), {}));
}

TEST(FakeSleeperTest, AdvancesTheClock) {
  common::FakeClock clock;
  FakeSleeper sleeper(clock);
  EXPECT_TRUE(sleeper.Sleep(absl::Seconds(3), {}));
  EXPECT_TRUE(sleeper.Sleep(absl::ZeroDuration(), {}));
  EXPECT_EQ(clock.Now(), absl::UnixEpoch() + absl::Seconds(3));
  EXPECT_THAT(sleeper.sleeps(), ::testing::ElementsAre(absl::Seconds(3)));
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(sleeper.Sleep(absl::Seconds(1), stop.get_token()));
}

}  // namespace
}  // namespace gpulet::kube
