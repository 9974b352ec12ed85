#include "src/cli/validators.h"

#include <string>

#include "gtest/gtest.h"

namespace gpulet::cli {
namespace {

// The message for `value`, empty when accepted.
std::string Check(const CLI::Validator& v, std::string value) {
  return v(value);
}

TEST(ValidatorsTest, WholeNumberAtLeast) {
  CLI::Validator v = WholeNumberAtLeast(1);
  EXPECT_EQ(v.get_description(), "POSITIVE");
  EXPECT_EQ(Check(v, "1"), "");
  EXPECT_EQ(Check(v, "10000"), "");
  EXPECT_EQ(Check(v, "0"), "'0' is not a whole number of 1 or more");
  EXPECT_EQ(Check(v, "1.5"), "'1.5' is not a whole number of 1 or more");
  EXPECT_EQ(Check(v, "x"), "'x' is not a whole number of 1 or more");
  EXPECT_EQ(WholeNumberAtLeast(0).get_description(), ">=0");
}

TEST(ValidatorsTest, WholeNumberIn) {
  CLI::Validator v = WholeNumberIn(1024, int64_t{1} << 30);
  EXPECT_EQ(v.get_description(), "1024..1073741824");
  EXPECT_EQ(Check(v, "1024"), "");
  EXPECT_EQ(Check(v, "1073741824"), "");
  EXPECT_EQ(Check(v, "1073741825"),
            "'1073741825' is not a whole number from 1024 to 1073741824");
  EXPECT_EQ(Check(v, "5"), "'5' is not a whole number from 1024 to 1073741824");
}

TEST(ValidatorsTest, NumberIn) {
  CLI::Validator v = NumberIn(1, 10000);
  EXPECT_EQ(v.get_description(), "1..10000");
  EXPECT_EQ(Check(v, "1"), "");
  EXPECT_EQ(Check(v, "2.5"), "");
  EXPECT_EQ(Check(v, "0.5"), "'0.5' is not a number from 1 to 10000");
  EXPECT_EQ(Check(v, "1e9"), "'1e9' is not a number from 1 to 10000");
  EXPECT_EQ(Check(v, "nan"), "'nan' is not a number from 1 to 10000");
}

}  // namespace
}  // namespace gpulet::cli
