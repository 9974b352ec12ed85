#include "src/cluster/extender/node_cache.h"

#include "gtest/gtest.h"
#include "src/cluster/testing/test_nodes.h"

namespace gpulet::extender {
namespace {

using testing::Memory;
using testing::NodeObject;

TEST(NewerVersion, NumbersCompareNumerically) {
  EXPECT_TRUE(NewerVersion("10", "9"));
  EXPECT_FALSE(NewerVersion("9", "10"));
  EXPECT_FALSE(NewerVersion("9", "9"));
  EXPECT_TRUE(NewerVersion("b", "a9"));
}

TEST(NodeCache, ListEventsAndOwnWrites) {
  NodeCache cache;
  EXPECT_FALSE(cache.synced());
  const sharing::NodeMemory m = Memory("n1", {{16, 0}});
  cache.Replace({NodeObject("n1", &m, nullptr, "5"),
                 NodeObject("n2", nullptr, nullptr, "6")});
  EXPECT_TRUE(cache.synced());
  EXPECT_EQ(cache.size(), 2u);
  ASSERT_NE(cache.Find("n1"), nullptr);
  EXPECT_TRUE(cache.Find("n1")->memory_status.ok());
  EXPECT_EQ(cache.Find("n2")->memory_status.code(),
            absl::StatusCode::kNotFound);

  // The extender's own write, then an older watch event: the write stays.
  cache.Update(NodeObject("n1", &m, nullptr, "9"));
  cache.Apply({.type = kube::EventType::kModified,
               .object = NodeObject("n1", &m, nullptr, "7")});
  EXPECT_EQ(cache.Find("n1")->resource_version, "9");
  cache.Apply({.type = kube::EventType::kModified,
               .object = NodeObject("n1", &m, nullptr, "11")});
  EXPECT_EQ(cache.Find("n1")->resource_version, "11");

  cache.Apply({.type = kube::EventType::kAdded,
               .object = NodeObject("n3", &m, nullptr, "12")});
  cache.Apply({.type = kube::EventType::kDeleted,
               .object = NodeObject("n2", nullptr, nullptr, "13")});
  EXPECT_EQ(cache.Find("n2"), nullptr);
  EXPECT_NE(cache.Find("n3"), nullptr);
  EXPECT_EQ(cache.size(), 2u);

  // A re-list replaces everything.
  cache.Replace({NodeObject("n4", &m, nullptr, "3")});
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Find("n1"), nullptr);
}

}  // namespace
}  // namespace gpulet::extender
