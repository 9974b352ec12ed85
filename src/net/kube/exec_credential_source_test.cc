// ExecCredentialSource's caching: when the plugin runs again.
#include "src/net/kube/exec_credential_source.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"

namespace gpulet::kube {
namespace {

class ExecCredentialSourceTest : public ::testing::Test {
 protected:
  // Each run answers "t<n>", expiring `lifetime` after the clock's now.
  ExecCredentialSource::RunFn Plugin() {
    return [this]() -> absl::StatusOr<ExecCredential> {
      ++runs_;
      if (fail_) return absl::FailedPreconditionError("plugin failed");
      ExecCredential cred;
      cred.token = absl::StrCat("t", runs_);
      if (lifetime_ != absl::InfiniteDuration()) {
        cred.expiry = clock_.WallNow() + lifetime_;
      }
      return cred;
    };
  }

  common::FakeClock clock_{absl::FromUnixSeconds(1'800'000'000)};
  int runs_ = 0;
  bool fail_ = false;
  absl::Duration lifetime_ = absl::InfiniteDuration();
};

TEST_F(ExecCredentialSourceTest, CachedUntilItExpires) {
  lifetime_ = absl::Minutes(15);
  ExecCredentialSource source(Plugin(), clock_);
  absl::StatusOr<ExecCredentialSource::Current> got = source.Get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->credential.token, "t1");
  EXPECT_EQ(got->generation, 1u);
  clock_.Advance(absl::Minutes(15));
  EXPECT_EQ(source.Get()->credential.token, "t1");  // not yet past it
  EXPECT_EQ(runs_, 1);
  clock_.Advance(absl::Seconds(1));
  got = source.Get();
  EXPECT_EQ(got->credential.token, "t2");
  EXPECT_EQ(got->generation, 2u);
  EXPECT_EQ(source.runs(), 2);
}

TEST_F(ExecCredentialSourceTest, WithoutExpiryKeptUntilRefused) {
  ExecCredentialSource source(Plugin(), clock_);
  EXPECT_EQ(source.Get()->credential.token, "t1");
  clock_.Advance(absl::Hours(24 * 365));
  EXPECT_EQ(source.Get()->credential.token, "t1");
  EXPECT_EQ(runs_, 1);
}

TEST_F(ExecCredentialSourceTest, ARefusedCredentialRunsThePluginOnce) {
  ExecCredentialSource source(Plugin(), clock_);
  const uint64_t refused = source.Get()->generation;
  // Several requests refused with the same credential: one new run.
  source.Invalidate(refused);
  EXPECT_EQ(source.Get()->credential.token, "t2");
  source.Invalidate(refused);
  source.Invalidate(refused);
  EXPECT_EQ(source.Get()->credential.token, "t2");
  EXPECT_EQ(runs_, 2);
  source.Invalidate(refused + 1);
  EXPECT_EQ(source.Get()->credential.token, "t3");
}

TEST_F(ExecCredentialSourceTest, AFailedRunIsNotCached) {
  fail_ = true;
  ExecCredentialSource source(Plugin(), clock_);
  EXPECT_EQ(source.Get().status().code(),
            absl::StatusCode::kFailedPrecondition);
  fail_ = false;
  EXPECT_EQ(source.Get()->credential.token, "t2");
  EXPECT_EQ(source.Get()->generation, 1u);
}

}  // namespace
}  // namespace gpulet::kube
