// A test program for test/strict's check of scripts/ctest-strict: one test
// that passes, one that skips in its body and one whose helper skips
// before the test goes on and passes, each only when
// GTEST_SKIP_FIXTURE_SKIP=1. GTest reports a test with a skip and no
// failure as skipped however it went on, so the strict run must fail on
// the helper's skip as on the body's.
#include <cstdlib>
#include <cstring>

#include "gtest/gtest.h"

namespace {

bool AskedToSkip() {
  const char* v = std::getenv("GTEST_SKIP_FIXTURE_SKIP");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// Leaves only itself: the caller does not check IsSkipped().
void SkippingHelper() {
  if (AskedToSkip()) GTEST_SKIP() << "asked to skip (helper)";
}

TEST(StrictFixture, Passes) { EXPECT_EQ(1 + 1, 2); }

TEST(StrictFixture, SkipsInBody) {
  if (AskedToSkip()) GTEST_SKIP() << "asked to skip (body)";
  EXPECT_EQ(2 + 2, 4);
}

TEST(StrictFixture, SkipsInHelper) {
  SkippingHelper();
  EXPECT_EQ(3 + 3, 6);
}

}  // namespace
