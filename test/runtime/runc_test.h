// The set-up every test that runs runc containers shares: where containers
// cannot run here (not root, no runc, no busybox-static) the test is
// skipped with the reason, which fails CI (GPULET_FAIL_ON_SKIP); otherwise
// it gets a fresh RuncFixture, removed with the test. A test that needs
// more set-up calls RuncTest::SetUp() first and returns when it skipped or
// failed. Header-only: GPULET_RUNTIME_BINARY and GPULET_FAKE_LIB_DIR are
// the including test program's compile definitions.
#pragma once

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "test/runtime/runc_fixture.h"

namespace gpulet::testing {

template <typename Base = ::testing::Test>
class RuncTest : public Base {
 protected:
  void SetUp() override {
    std::string why;
    if (!CanRunContainers(&why)) GTEST_SKIP() << why;
    auto fixture =
        RuncFixture::Create({GPULET_RUNTIME_BINARY, GPULET_FAKE_LIB_DIR});
    ASSERT_TRUE(fixture.ok()) << fixture.status();
    fixture_ = *std::move(fixture);
  }

  // True when SetUp above skipped or failed: the caller's SetUp returns.
  bool SetUpStopped() const {
    return ::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure();
  }

  std::unique_ptr<RuncFixture> fixture_;
};

}  // namespace gpulet::testing
