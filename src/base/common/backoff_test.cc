#include "src/base/common/backoff.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::daemon {
namespace {

using ::testing::ElementsAre;

std::vector<int64_t> Millis(Backoff& backoff, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i)
    out.push_back(absl::ToInt64Milliseconds(backoff.Next()));
  return out;
}

TEST(BackoffTest, DoublesFrom100msAndCapsAt5s) {
  Backoff backoff;
  EXPECT_THAT(Millis(backoff, 9),
              ElementsAre(100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000));
  EXPECT_EQ(backoff.failures(), 9);
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff backoff;
  Millis(backoff, 4);
  backoff.Reset();
  EXPECT_EQ(backoff.failures(), 0);
  EXPECT_THAT(Millis(backoff, 2), ElementsAre(100, 200));
}

TEST(BackoffTest, LongOutageStaysCapped) {
  Backoff backoff;
  Millis(backoff, 10000);
  EXPECT_EQ(backoff.Next(), absl::Seconds(5));
}

TEST(BackoffTest, CustomPolicy) {
  Backoff backoff(BackoffPolicy{absl::Milliseconds(5), absl::Milliseconds(12)});
  EXPECT_THAT(Millis(backoff, 4), ElementsAre(5, 10, 12, 12));
}

}  // namespace
}  // namespace gpulet::daemon
