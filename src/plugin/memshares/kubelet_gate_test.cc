#include "src/plugin/memshares/kubelet_gate.h"

#include "gtest/gtest.h"

namespace gpulet::nodeagent {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1795496400);

TEST(KubeletGate, IdleUntilTheKubeletChooses) {
  KubeletGate gate(absl::Seconds(1), absl::Seconds(10));
  EXPECT_EQ(gate.BusyFor(kT0), absl::ZeroDuration());
}

// From the preferred-allocation call until `grace` after the answer.
TEST(KubeletGate, BusyFromTheChoiceUntilGraceAfterTheAnswer) {
  KubeletGate gate(absl::Seconds(1), absl::Seconds(10));
  gate.Choosing(kT0);
  EXPECT_EQ(gate.BusyFor(kT0 + absl::Seconds(2)), absl::Seconds(8));
  gate.Answering();
  EXPECT_GT(gate.BusyFor(kT0 + absl::Minutes(1)), absl::ZeroDuration())
      << "an answer in progress has no known end";
  gate.Answered(kT0 + absl::Seconds(3));
  EXPECT_EQ(gate.BusyFor(kT0 + absl::Seconds(3)), absl::Seconds(1));
  EXPECT_EQ(gate.BusyFor(kT0 + absl::Seconds(4)), absl::ZeroDuration());
  // The next container's choice closes it again.
  gate.Choosing(kT0 + absl::Seconds(5));
  EXPECT_EQ(gate.BusyFor(kT0 + absl::Seconds(5)), absl::Seconds(10));
}

// A choice the kubelet never follows with Allocate (the admission failed)
// holds Lists back for `choice_timeout` only.
TEST(KubeletGate, AChoiceWithoutAnswerExpires) {
  KubeletGate gate(absl::Seconds(1), absl::Seconds(10));
  gate.Choosing(kT0);
  EXPECT_EQ(gate.BusyFor(kT0 + absl::Seconds(10)), absl::ZeroDuration());
}

// An Allocate without a preferred-allocation call before it.
TEST(KubeletGate, AnAnswerWithoutChoice) {
  KubeletGate gate(absl::Seconds(1), absl::Seconds(10));
  gate.Answering();
  gate.Answered(kT0);
  EXPECT_EQ(gate.BusyFor(kT0 + absl::Milliseconds(500)),
            absl::Milliseconds(500));
}

TEST(KubeletGate, RemembersAListInProgress) {
  KubeletGate gate(absl::Seconds(1), absl::Seconds(10));
  EXPECT_FALSE(gate.listing());
  gate.set_listing(true);
  EXPECT_TRUE(gate.listing());
}

}  // namespace
}  // namespace gpulet::nodeagent
