#include "src/cli/nearest_name.h"

#include "gtest/gtest.h"

namespace gpulet::cli {
namespace {

TEST(EditDistanceTest, CountsSingleByteEdits) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("devices", "devices"), 0u);
  EXPECT_EQ(EditDistance("devics", "devices"), 1u);  // a deletion
  EXPECT_EQ(EditDistance("lables", "labels"), 2u);   // a swap: two edits
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(NearestNameTest, SuggestsOnlyASlip) {
  const std::vector<std::string> names = {"devices", "topo", "dra", "labels"};
  EXPECT_EQ(NearestName("devics", names), "devices");
  EXPECT_EQ(NearestName("lables", names), "labels");
  EXPECT_EQ(NearestName("tpo", names), "topo");
  EXPECT_EQ(NearestName("drq", names), "dra");
  EXPECT_EQ(NearestName("daemon", names), std::nullopt);
  EXPECT_EQ(NearestName("x", {}), std::nullopt);
}

}  // namespace
}  // namespace gpulet::cli
