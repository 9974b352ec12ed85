#include "src/cli/table.h"

#include "gtest/gtest.h"

namespace gpulet::cli {
namespace {

TEST(TableTest, AlignsColumnsAndTrimsTrailingBlanks) {
  Table table({"A", "LONG HEADER", "C"});
  table.AddRow({"wide cell", "x", ""});
  table.AddRow({"1"});
  EXPECT_EQ(table.Render(),
            "A          LONG HEADER  C\n"
            "wide cell  x\n"
            "1\n");
}

TEST(TableTest, CustomGapAndHeaderOnly) {
  Table table({"", "GPU0"}, 3);
  EXPECT_EQ(table.Render(), "   GPU0\n");
}

TEST(TableTest, LongerRowsWidenTheTable) {
  Table table({"A"});
  table.AddRow({"a", "extra"});
  EXPECT_EQ(table.Render(), "A\na  extra\n");
}

TEST(FormatCpuListTest, Ranges) {
  EXPECT_EQ(FormatCpuList({}), "N/A");
  EXPECT_EQ(FormatCpuList({3}), "3");
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(FormatCpuList({5, 0, 1, 2, 7, 8, 2}), "0-2,5,7-8");
}

}  // namespace
}  // namespace gpulet::cli
