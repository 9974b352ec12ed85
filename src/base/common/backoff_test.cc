#include "src/base/common/backoff.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::common {
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
  Backoff backoff(
      {.initial = absl::Milliseconds(5), .max = absl::Milliseconds(12)});
  EXPECT_THAT(Millis(backoff, 4), ElementsAre(5, 10, 12, 12));
}

TEST(BackoffTest, DoublesToTheCapWithJitter) {
  double r = 0;
  Backoff backoff({.initial = absl::Milliseconds(100),
                   .max = absl::Milliseconds(500),
                   .jitter = 0.5},
                  [&] { return r; });
  std::vector<absl::Duration> got;
  for (int i = 0; i < 5; ++i) got.push_back(backoff.Next());
  EXPECT_THAT(got, ElementsAre(absl::Milliseconds(100), absl::Milliseconds(200),
                               absl::Milliseconds(400), absl::Milliseconds(500),
                               absl::Milliseconds(500)));
  r = 0.5;
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(625));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(125));
}

TEST(BackoffTest, DefaultRandomStaysInRange) {
  Backoff backoff(
      {.initial = absl::Seconds(1), .max = absl::Seconds(1), .jitter = 0.5});
  for (int i = 0; i < 100; ++i) {
    absl::Duration d = backoff.Next();
    EXPECT_GE(d, absl::Seconds(1));
    EXPECT_LE(d, absl::Milliseconds(1500));
  }
}

TEST(BackoffTest, NoJitterNeverDrawsARandomNumber) {
  int draws = 0;
  Backoff backoff({}, [&] {
    ++draws;
    return 0.9;
  });
  EXPECT_THAT(Millis(backoff, 3), ElementsAre(100, 200, 400));
  EXPECT_EQ(draws, 0);
}

}  // namespace
}  // namespace gpulet::common
