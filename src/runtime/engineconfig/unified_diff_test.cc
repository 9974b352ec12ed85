#include "src/runtime/engineconfig/unified_diff.h"

#include <string>

#include "gtest/gtest.h"

namespace gpulet::engineconfig {
namespace {

TEST(UnifiedDiffTest, EqualTextsGiveNothing) {
  EXPECT_EQ(UnifiedDiff("a\nb\n", "a\nb\n", "f"), "");
}

TEST(UnifiedDiffTest, InsertionWithContext) {
  std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n";
  std::string after = "1\n2\n3\n4\nnew\n5\n6\n7\n8\n";
  EXPECT_EQ(UnifiedDiff(before, after, "c.toml"),
            "--- c.toml\n+++ c.toml\n"
            "@@ -2,6 +2,7 @@\n 2\n 3\n 4\n+new\n 5\n 6\n 7\n");
}

TEST(UnifiedDiffTest, ReplacementAtTheStartAndFarApartChangesMakeTwoHunks) {
  std::string before = "a\n1\n2\n3\n4\n5\n6\n7\n8\n9\nz\n";
  std::string after = "A\n1\n2\n3\n4\n5\n6\n7\n8\n9\nz\nend\n";
  EXPECT_EQ(UnifiedDiff(before, after, "f"),
            "--- f\n+++ f\n"
            "@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n"
            "@@ -9,3 +9,4 @@\n 8\n 9\n z\n+end\n");
}

TEST(UnifiedDiffTest, IntoAnEmptyFile) {
  EXPECT_EQ(UnifiedDiff("", "x\n", "f"), "--- f\n+++ f\n@@ -0,0 +1 @@\n+x\n");
}

TEST(UnifiedDiffTest, MissingFinalNewlineIsMarked) {
  EXPECT_EQ(UnifiedDiff("a", "a\nb\n", "f"),
            "--- f\n+++ f\n@@ -1 +1,2 @@\n-a\n\\ No newline at end of file\n"
            "+a\n+b\n");
}

}  // namespace
}  // namespace gpulet::engineconfig
