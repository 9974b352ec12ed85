#include "src/base/yaml/nesting_depth.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::yaml {
namespace {

using ::testing::HasSubstr;

// `depth` block maps, one per line, each indented one more step.
std::string BlockMaps(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) {
    text += std::string(2 * i, ' ') + "k" + std::to_string(i) + ":\n";
  }
  return text;
}

TEST(CheckNestingDepthTest, AcceptsUpToTheLimit) {
  EXPECT_TRUE(CheckNestingDepth(BlockMaps(8), 8, "f.yaml").ok());
  EXPECT_TRUE(CheckNestingDepth("a: [[[1]]]\n", 4, "f.yaml").ok());
}

TEST(CheckNestingDepthTest, NamesTheFirstLineTooDeep) {
  absl::Status s = CheckNestingDepth(BlockMaps(9), 8, "f.yaml");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "f.yaml:9:1: nesting deeper than 8 levels");
  EXPECT_THAT(CheckNestingDepth("a: [[[[1]]]]\n", 4, "f.yaml").message(),
              HasSubstr("f.yaml:1:1:"));
}

TEST(CheckNestingDepthTest, IgnoresBracketsInQuotesAndComments) {
  EXPECT_TRUE(CheckNestingDepth("a: \"[[[[[[\" # [[[[[[\n", 2, "f").ok());
  EXPECT_TRUE(CheckNestingDepth("a: '[[[['' [[[['\n", 2, "f").ok());
  EXPECT_TRUE(CheckNestingDepth("a: it's [b]\n", 2, "f").ok());
}

}  // namespace
}  // namespace gpulet::yaml
