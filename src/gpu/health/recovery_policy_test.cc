// The recovery policy, table-driven with explicit instants (no clock, no
// sleeping): each case is a script of fatal events and probes at given
// minutes, and the minute at which the GPU is healthy again (or never).
#include "src/gpu/health/recovery_policy.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::health {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

absl::Time At(int minute) { return absl::UnixEpoch() + absl::Minutes(minute); }

struct Step {
  int minute;
  // A fatal event with this Xid (0: double-bit ECC event) when `fatal`,
  // else a probe with `probe`.
  bool fatal;
  uint64_t xid;
  ProbeResult probe;
};

Step Fatal(int minute, uint64_t xid) {
  return {minute, true, xid, ProbeResult::kOk};
}
Step Probe(int minute, ProbeResult result = ProbeResult::kOk) {
  return {minute, false, 0, result};
}
constexpr ProbeResult kLost = ProbeResult::kLost;
constexpr ProbeResult kFailed = ProbeResult::kFailed;

struct Case {
  const char* name;
  std::vector<Step> steps;
  std::optional<int> recovered_at;  // minute of the probe that recovers
};

TEST(RecoveryPolicyTest, Table) {
  // Quiet period: 5 minutes. Xid 32 does not need a reset; 79 and 48 do.
  const Case cases[] = {
      {"no reset: recovers at the first probe after the quiet period",
       {Fatal(0, 32), Probe(1), Probe(4), Probe(5), Probe(6)},
       5},
      {"no reset: probes before the quiet period do not recover",
       {Fatal(0, 32), Probe(1), Probe(2), Probe(3), Probe(4)},
       std::nullopt},
      {"no reset: a new fatal event restarts the quiet period",
       {Fatal(0, 32), Probe(3), Fatal(4, 32), Probe(5), Probe(8), Probe(9)},
       9},
      {"no reset: a failed probe restarts the quiet period",
       {Fatal(0, 32), Probe(3, kFailed), Probe(5), Probe(7), Probe(8)},
       8},
      {"no reset: lost then back restarts the quiet period",
       {Fatal(0, 32), Probe(1, kLost), Probe(2), Probe(6), Probe(7)},
       7},
      {"reset: never recovers while it keeps answering",
       {Fatal(0, 48), Probe(1), Probe(10), Probe(100)},
       std::nullopt},
      {"reset: no recovery while lost, even long after",
       {Fatal(0, 79), Probe(0, kLost), Probe(10, kLost), Probe(60, kLost)},
       std::nullopt},
      {"reset: lost, back, then the quiet period from the return",
       {Fatal(0, 79), Probe(0, kLost), Probe(10, kLost), Probe(20), Probe(24),
        Probe(25)},
       25},
      {"reset: a reset before the fault does not count",
       {Fatal(0, 32), Probe(1, kLost), Probe(2), Fatal(3, 48), Probe(8),
        Probe(30)},
       std::nullopt},
      {"reset: a reset-needing fault after the return needs another reset",
       {Fatal(0, 79), Probe(1, kLost), Probe(2), Fatal(3, 95), Probe(9),
        Probe(10, kLost), Probe(11), Probe(16)},
       16},
      {"reset: a minor fault after the return restarts the quiet period",
       {Fatal(0, 79), Probe(1, kLost), Probe(2), Fatal(4, 32), Probe(7),
        Probe(9)},
       9},
      {"double-bit ECC event needs a reset",
       {Fatal(0, 0), Probe(10)},
       std::nullopt},
  };
  for (const Case& c : cases) {
    RecoveryPolicy policy(absl::Minutes(5));
    std::optional<int> recovered_at;
    for (const Step& step : c.steps) {
      if (step.fatal) {
        policy.OnFatal(0, step.xid, "Xid", At(step.minute));
        continue;
      }
      std::optional<std::string> recovered =
          policy.OnProbe(0, step.probe, At(step.minute));
      if (recovered.has_value()) {
        EXPECT_FALSE(recovered_at.has_value()) << c.name << ": twice";
        recovered_at = step.minute;
        break;
      }
    }
    EXPECT_EQ(recovered_at, c.recovered_at) << c.name;
    EXPECT_EQ(policy.Unhealthy().empty(), recovered_at.has_value()) << c.name;
  }
}

TEST(RecoveryPolicyTest, ZeroQuietPeriodRecoversAtTheFirstGoodProbe) {
  RecoveryPolicy policy(absl::ZeroDuration());
  policy.OnFatal(1, 32, "Xid 32", At(0));
  EXPECT_EQ(policy.OnProbe(1, kFailed, At(0)), std::nullopt);
  EXPECT_NE(policy.OnProbe(1, ProbeResult::kOk, At(0)), std::nullopt);
  policy.OnFatal(2, 79, "Xid 79", At(0));
  EXPECT_EQ(policy.OnProbe(2, ProbeResult::kOk, At(0)), std::nullopt);
  EXPECT_EQ(policy.OnProbe(2, kLost, At(0)), std::nullopt);
  EXPECT_NE(policy.OnProbe(2, ProbeResult::kOk, At(0)), std::nullopt);
}

// A fault that is the loss itself (Xid 79 read, or a probe that found the
// GPU lost) counts as the reset's first half: a GPU that answers at the next
// probe recovers once the quiet period since it answered has passed, without
// a probe ever seeing it lost.
TEST(RecoveryPolicyTest, AFaultThatIsTheLossCountsAsTheResetsFirstHalf) {
  RecoveryPolicy policy(absl::Minutes(5));
  policy.OnFault(1, /*needs_reset=*/true, "Xid 79", At(0), /*is_loss=*/true);
  EXPECT_EQ(policy.OnProbe(1, ProbeResult::kOk, At(1)), std::nullopt);
  EXPECT_EQ(policy.OnProbe(1, ProbeResult::kOk, At(5)), std::nullopt);
  EXPECT_NE(policy.OnProbe(1, ProbeResult::kOk, At(6)), std::nullopt);
  // The same fault without is_loss waits for a probe to see the loss.
  policy.OnFault(2, /*needs_reset=*/true, "Xid 79", At(0));
  EXPECT_EQ(policy.OnProbe(2, ProbeResult::kOk, At(30)), std::nullopt);
  EXPECT_THAT(policy.Unhealthy(), ElementsAre(2));
}

TEST(RecoveryPolicyTest, TracksEachGpuAndNamesTheFault) {
  RecoveryPolicy policy(absl::Minutes(5));
  EXPECT_THAT(policy.Unhealthy(), IsEmpty());
  EXPECT_EQ(policy.OnProbe(3, ProbeResult::kOk, At(9)), std::nullopt);
  policy.OnFatal(4, 32, "Xid 32 (Invalid or corrupted push buffer stream)",
                 At(0));
  policy.OnFatal(2, 79, "Xid 79 (GPU has fallen off the bus)", At(0));
  EXPECT_THAT(policy.Unhealthy(), ElementsAre(2, 4));
  std::optional<std::string> why = policy.OnProbe(4, ProbeResult::kOk, At(5));
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("recovered after Xid 32 (Invalid or corrupted "
                              "push buffer stream)"));
  EXPECT_THAT(*why, HasSubstr("5m"));
  EXPECT_THAT(policy.Unhealthy(), ElementsAre(2));
  EXPECT_EQ(policy.OnProbe(2, kLost, At(6)), std::nullopt);
  why = policy.OnProbe(2, ProbeResult::kOk, At(20));
  EXPECT_EQ(why, std::nullopt);
  why = policy.OnProbe(2, ProbeResult::kOk, At(25));
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("reset"));
  EXPECT_THAT(policy.Unhealthy(), IsEmpty());
}

TEST(RecoveryPolicyTest, ResetXids) {
  for (uint64_t xid : {0, 48, 63, 64, 74, 79, 92, 94, 95, 119, 120}) {
    EXPECT_TRUE(NeedsReset(xid)) << xid;
  }
  for (uint64_t xid : {13, 31, 32, 38, 43, 45, 61, 62, 68, 69, 109, 999}) {
    EXPECT_FALSE(NeedsReset(xid)) << xid;
  }
}

}  // namespace
}  // namespace gpulet::health
