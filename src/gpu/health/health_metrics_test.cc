#include "src/gpu/health/health_metrics.h"

#include <vector>

#include "gtest/gtest.h"

namespace gpulet::health {
namespace {

std::vector<device::Gpu> Gpus() {
  std::vector<device::Gpu> gpus(2);
  gpus[0].index = 0;
  gpus[0].uuid = "GPU-aaa";
  gpus[1].index = 1;  // no UUID: labelled by index
  return gpus;
}

TEST(HealthMetricsTest, GaugesCountersAndCleanup) {
  metrics::Registry registry;
  metrics::GpuletMetrics m = *metrics::GpuletMetrics::Register(registry);
  {
    HealthMetrics hm(&m, Gpus());
    EXPECT_EQ(m.gpu_healthy->Value({"GPU-aaa"}), 1);
    EXPECT_EQ(m.gpu_healthy->Value({"1"}), 1);
    hm.OnXid(0, 13);
    hm.OnXid(0, 13);
    hm.OnXid(1, 79);
    EXPECT_EQ(m.xid_events->Value({"GPU-aaa", "13"}), 2);
    EXPECT_EQ(m.xid_events->Value({"1", "79"}), 1);

    HealthEvent bad;
    bad.gpu_index = 1;
    bad.xid = 79;
    hm.OnTransition(bad);
    EXPECT_EQ(m.gpu_healthy->Value({"1"}), 0);
    EXPECT_EQ(m.health_transitions->Value({"unhealthy", "xid"}), 1);

    HealthEvent good;
    good.gpu_index = 1;
    good.healthy = true;
    good.cause = HealthCause::kRecoveredReset;
    hm.OnTransition(good);
    EXPECT_EQ(m.gpu_healthy->Value({"1"}), 1);
    EXPECT_EQ(m.health_transitions->Value({"healthy", "reset"}), 1);
  }
  EXPECT_EQ(m.gpu_healthy->size(), 0u);  // removed with the monitor
  EXPECT_EQ(m.xid_events->Value({"GPU-aaa", "13"}), 2);  // counters stay
}

TEST(HealthMetricsTest, WithoutMetricsEverythingIsANoOp) {
  HealthMetrics hm(nullptr, Gpus());
  hm.OnXid(0, 79);
  hm.OnTransition(HealthEvent{});
  EXPECT_EQ(hm.GpuLabel(0), "GPU-aaa");
  EXPECT_EQ(hm.GpuLabel(7), "7");
}

TEST(HealthMetricsTest, CauseLabels) {
  EXPECT_STREQ(CauseLabel(HealthCause::kXid), "xid");
  EXPECT_STREQ(CauseLabel(HealthCause::kDoubleBitEcc), "double_bit_ecc");
  EXPECT_STREQ(CauseLabel(HealthCause::kWatchFailed), "watch_failed");
  EXPECT_STREQ(CauseLabel(HealthCause::kLost), "lost");
  EXPECT_STREQ(CauseLabel(HealthCause::kRecoveredQuiet), "quiet_period");
  EXPECT_STREQ(CauseLabel(HealthCause::kRecoveredReset), "reset");
}

TEST(XidLabelTest, TheLabelSetIsBounded) {
  EXPECT_EQ(XidLabel(79), "79");
  EXPECT_EQ(XidLabel(255), "255");
  EXPECT_EQ(XidLabel(0), "other");
  EXPECT_EQ(XidLabel(256), "other");
  EXPECT_EQ(XidLabel(uint64_t{1} << 40), "other");
}

}  // namespace
}  // namespace gpulet::health
