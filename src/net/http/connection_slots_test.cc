#include "src/net/http/connection_slots.h"

#include <optional>

#include "gtest/gtest.h"

namespace gpulet::http {
namespace {

using State = ConnectionSlots::State;

TEST(ConnectionSlots, BusyConnectionsFillTheServerThenNewOnesWait) {
  ConnectionSlots slots({.max_total = 2, .max_per_peer = 2});
  const auto a = slots.Admit("10.0.0.1");
  const auto b = slots.Admit("10.0.0.2");
  ASSERT_TRUE(a.admitted && b.admitted);
  slots.SetState(a.id, State::kBusy);
  slots.SetState(b.id, State::kBusy);
  EXPECT_FALSE(slots.CanAdmit());
  EXPECT_FALSE(slots.Admit("10.0.0.3").admitted);
  slots.Release(a.id);
  EXPECT_TRUE(slots.CanAdmit());
  EXPECT_TRUE(slots.Admit("10.0.0.3").admitted);
}

TEST(ConnectionSlots, TheOldestIdleConnectionGivesWay) {
  ConnectionSlots slots({.max_total = 3, .max_per_peer = 3});
  const auto a = slots.Admit("10.0.0.1");
  const auto b = slots.Admit("10.0.0.1");
  const auto c = slots.Admit("10.0.0.2");
  slots.SetState(a.id, State::kBusy);
  slots.SetState(c.id, State::kIdle);  // idle after b went idle
  slots.SetState(b.id, State::kBusy);
  slots.SetState(b.id, State::kIdle);
  EXPECT_TRUE(slots.CanAdmit());
  const auto d = slots.Admit("10.0.0.3");
  ASSERT_TRUE(d.admitted);
  EXPECT_EQ(d.evict, std::optional(c.id));
  // An evicted connection no longer counts, nor gives way twice.
  EXPECT_EQ(slots.open(), 3);
  const auto e = slots.Admit("10.0.0.3");
  ASSERT_TRUE(e.admitted);
  EXPECT_EQ(e.evict, std::optional(b.id));
}

TEST(ConnectionSlots, APeerAtItsLimitReplacesItsOwnIdleConnection) {
  ConnectionSlots slots({.max_total = 10, .max_per_peer = 2});
  const auto a = slots.Admit("10.0.0.1");
  const auto b = slots.Admit("10.0.0.1");
  const auto other = slots.Admit("10.0.0.2");  // older, idle, another peer
  slots.SetState(a.id, State::kIdle);
  slots.SetState(b.id, State::kBusy);
  (void)other;
  const auto c = slots.Admit("10.0.0.1");
  ASSERT_TRUE(c.admitted);
  EXPECT_EQ(c.evict, std::optional(a.id));
  // Both of its connections busy: the peer's next one is refused, while
  // other peers are still served.
  slots.SetState(c.id, State::kBusy);
  const auto refused = slots.Admit("10.0.0.1");
  EXPECT_FALSE(refused.admitted);
  EXPECT_TRUE(refused.peer_full);
  EXPECT_TRUE(slots.Admit("10.0.0.3").admitted);
}

TEST(ConnectionSlots, UntrustedClientsGiveWayEvenWhenBusy) {
  ConnectionSlots slots(
      {.max_total = 2, .max_per_peer = 2, .evict_untrusted = true});
  const auto scheduler = slots.Admit("10.0.0.1");
  const auto stranger = slots.Admit("10.0.0.2");
  slots.SetTrusted(scheduler.id);
  slots.SetState(scheduler.id, State::kBusy);
  slots.SetState(stranger.id, State::kBusy);
  const auto next = slots.Admit("10.0.0.1");
  ASSERT_TRUE(next.admitted);
  EXPECT_EQ(next.evict, std::optional(stranger.id));
  // Without client authentication a busy connection never gives way.
  ConnectionSlots plain({.max_total = 1, .max_per_peer = 1});
  const auto only = plain.Admit("10.0.0.2");
  plain.SetState(only.id, State::kBusy);
  EXPECT_FALSE(plain.CanAdmit());
}

TEST(ConnectionSlots, ConnectionsStillEndingAreBoundedToo) {
  ConnectionSlots slots({.max_total = 1, .max_per_peer = 1});
  // Each new idle connection evicts the previous one, which has not ended
  // yet: at most twice the limit are booked at once.
  const auto first = slots.Admit("10.0.0.1");
  ASSERT_TRUE(first.admitted);
  const auto second = slots.Admit("10.0.0.1");
  ASSERT_TRUE(second.admitted);
  EXPECT_FALSE(slots.CanAdmit());
  EXPECT_FALSE(slots.Admit("10.0.0.1").admitted);
  slots.Release(first.id);
  EXPECT_TRUE(slots.Admit("10.0.0.1").admitted);
}

}  // namespace
}  // namespace gpulet::http
