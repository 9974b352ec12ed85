#include "src/base/yaml/fields.h"

#include <string>

#include "gtest/gtest.h"

namespace gpulet::yaml {
namespace {

TEST(PathsTest, JoinAndIndex) {
  EXPECT_EQ(JoinPath("", "gpus"), "gpus");
  EXPECT_EQ(JoinPath(IndexPath("gpus", 2), "uuid"), "gpus[2].uuid");
}

TEST(QuoteTest, EscapesAndCutsLongValues) {
  EXPECT_EQ(Quote("a\"b\n"), "\"a\\\"b\\n\"");
  std::string cut = Quote(std::string(70, 'x'));
  EXPECT_EQ(cut, "\"" + std::string(60, 'x') + "...\"");
}

TEST(DescribeTest, NamesEveryKindOfNode) {
  EXPECT_EQ(Describe(YAML::Load("[1]")), "a list");
  EXPECT_EQ(Describe(YAML::Load("{a: 1}")), "a map");
  EXPECT_EQ(Describe(YAML::Load("~")), "nothing (null)");
  EXPECT_EQ(Describe(YAML::Load("abc")), "\"abc\"");
}

TEST(UnknownKeyTest, SuggestsANearMissOrListsTheKeys) {
  EXPECT_EQ(UnknownKey("gpu", {"gpus", "nvlinks"}),
            "unknown key \"gpu\" (did you mean \"gpus\"?)");
  EXPECT_EQ(UnknownKey("GPUS", {"gpus"}),
            "unknown key \"GPUS\" (did you mean \"gpus\"?)");
  EXPECT_EQ(UnknownKey("colour", {"uuid", "busId"}),
            "unknown key \"colour\" (known keys: uuid, busId)");
}

}  // namespace
}  // namespace gpulet::yaml
