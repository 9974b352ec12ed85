#include "sim/event_queue.h"

#include "gtest/gtest.h"

namespace gpulet::sim {
namespace {

SimEvent Xid(unsigned long long xid) {
  return SimEvent{0, 0x8, xid, 0xFFFFFFFF, 0xFFFFFFFF};
}

TEST(EventQueueTest, FifoOrder) {
  EventQueue queue(4);
  queue.Push(Xid(1));
  queue.Push(Xid(2));
  EXPECT_EQ(queue.Pop()->data, 1u);
  EXPECT_EQ(queue.Pop()->data, 2u);
  EXPECT_FALSE(queue.Pop().has_value());
}

TEST(EventQueueTest, FloodKeepsTheNewestAndCountsDrops) {
  EventQueue queue;
  for (unsigned long long i = 0; i < 10000; ++i) queue.Push(Xid(i));
  EXPECT_EQ(queue.size(), kEventQueueCapacity);
  EXPECT_EQ(queue.dropped(), 10000 - kEventQueueCapacity);
  EXPECT_EQ(queue.Pop()->data, 10000 - kEventQueueCapacity);
}

TEST(EventQueueTest, PushReportsTheDrop) {
  EventQueue queue(1);
  EXPECT_FALSE(queue.Push(Xid(1)));
  EXPECT_TRUE(queue.Push(Xid(2)));
  EXPECT_EQ(queue.Pop()->data, 2u);
  queue.Push(Xid(3));
  queue.Clear();
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace gpulet::sim
