#include "src/base/common/check.h"

#include "gtest/gtest.h"

namespace gpulet::common {
namespace {

TEST(CheckTest, TrueConditionDoesNotEvaluateTheMessage) {
  int evaluated = 0;
  auto count = [&] { return ++evaluated; };
  GPULET_CHECK(1 + 1 == 2) << count();
  EXPECT_EQ(evaluated, 0);
}

TEST(CheckDeathTest, FalseConditionLogsAndAborts) {
  const int devices = 0;
  EXPECT_DEATH(GPULET_CHECK(devices > 0) << "no devices in "
                                         << "node-a",
               "check_test.cc:[0-9]+\\] check failed: devices > 0: "
               "no devices in node-a");
}

TEST(CheckDeathTest, WithoutAMessageNamesTheCondition) {
  const int gpus = 0;
  EXPECT_DEATH(GPULET_CHECK(gpus == 1), "check failed: gpus == 1\n");
}

TEST(CheckTest, UsableAsAStatementInAnIf) {
  bool ok = true;
  if (ok)
    GPULET_CHECK(ok) << "unreachable";
  else
    FAIL();
}

}  // namespace
}  // namespace gpulet::common
