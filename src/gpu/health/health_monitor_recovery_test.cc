// HealthMonitor against the NVML simulator (fixture in
// src/gpu/testing/health_monitor_fixture.h): recovery after the quiet
// period or a reset, the state carried over to the next monitor, discovery
// keeping a lost GPU's record, and the config file's per-Xid actions with
// the metrics.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "src/gpu/device/discovery.h"
#include "src/gpu/health/health_config.h"
#include "src/gpu/health/health_monitor.h"
#include "src/gpu/testing/health_monitor_fixture.h"

namespace gpulet::health {
namespace {

using ::testing::HasSubstr;

// Xid 32 needs no reset: the GPU recovers once NVML answers and the quiet
// period has passed since its last fatal event. Absence is proven by order:
// one probe round reports its recoveries in GPU order.
TEST_F(HealthMonitorTest, GpuRecoversAfterTheQuietPeriod) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor(WithQuietPeriod(absl::Minutes(5))));
  CONTROL("xid 1 32");
  CONTROL("xid 3 32");
  std::vector<HealthEvent> events = recorder_.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  clock_.Advance(absl::Minutes(4));
  CONTROL("xid 1 32");  // restarts GPU 1's quiet period (not reported again)
  CONTROL("xid 4 32");  // the marker: GPU 1's Xid was handled before it
  events = recorder_.WaitFor(3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].gpu_index, 4);
  clock_.Advance(absl::Minutes(2));  // 6 minutes after GPU 3's fault
  events = recorder_.WaitFor(4);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[3].gpu_index, 3);
  EXPECT_TRUE(events[3].healthy);
  EXPECT_THAT(events[3].reason,
              HasSubstr("recovered after Xid 32 (Invalid or corrupted push "
                        "buffer stream)"));
  EXPECT_EQ(events[3], Recovered(events[3]));
  clock_.Advance(absl::Minutes(5));
  events = recorder_.WaitFor(6);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[4].gpu_index, 1);
  EXPECT_TRUE(events[4].healthy);
  EXPECT_EQ(events[5].gpu_index, 4);
  EXPECT_TRUE(events[5].healthy);
  // Recovered GPUs are reported again.
  CONTROL("xid 1 48");
  events = recorder_.WaitFor(7);
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(events[6], Unhealthy(1, 48, "Xid 48 (Double Bit ECC Error)"));
}

// Xid 79 needs a reset: the GPU stays unhealthy while it is lost, whatever
// the quiet period, and recovers once it answers NVML again.
TEST_F(HealthMonitorTest, LostGpuRecoversOnlyAfterItComesBack) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor(WithQuietPeriod(absl::ZeroDuration())));
  ASSERT_NO_FATAL_FAILURE(Lose("2"));
  std::vector<HealthEvent> events = recorder_.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], Unhealthy(2, 79, "Xid 79 (GPU has fallen off the bus)"));
  // The marker: GPU 5 recovers in a probe round that also probed GPU 2.
  CONTROL("xid 5 32");
  events = recorder_.WaitFor(3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].gpu_index, 5);
  EXPECT_FALSE(events[1].healthy);
  EXPECT_EQ(events[2].gpu_index, 5);
  EXPECT_TRUE(events[2].healthy);
  ASSERT_NO_FATAL_FAILURE(Restore("2"));
  events = recorder_.WaitFor(4);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[3].gpu_index, 2);
  EXPECT_TRUE(events[3].healthy);
  EXPECT_THAT(events[3].reason, HasSubstr("recovered after Xid 79"));
  EXPECT_THAT(events[3].reason, HasSubstr("reset"));
  // It is watched again: a new fault is reported.
  CONTROL("xid 2 48");
  events = recorder_.WaitFor(5);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[4], Unhealthy(2, 48, "Xid 48 (Double Bit ECC Error)"));
}

// A reload that restarts the monitor hands its state to the next one: the
// GPUs reported unhealthy are not reported again, the quiet period counts
// from the first monitor's fault, and a GPU that needs a reset still needs
// it under the second monitor.
TEST_F(HealthMonitorTest, CarryOverContinuesRecoveryInTheNextMonitor) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor(WithQuietPeriod(absl::Minutes(5))));
  ASSERT_NO_FATAL_FAILURE(Lose("2"));
  CONTROL("xid 4 32");
  std::vector<HealthEvent> events = recorder_.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  CarryOver carried = monitor_->Stop();
  ASSERT_EQ(carried.reported.size(), 2u);
  EXPECT_EQ(carried.reported[0].gpu_index, 2);
  EXPECT_THAT(carried.reported[0].reason, HasSubstr("Xid 79"));
  EXPECT_EQ(carried.reported[1].gpu_index, 4);
  ASSERT_EQ(carried.recovery.size(), 2u);
  EXPECT_TRUE(carried.recovery[0].needs_reset);
  EXPECT_FALSE(carried.recovery[1].needs_reset);
  monitor_.reset();

  ASSERT_NO_FATAL_FAILURE(
      StartMonitor(WithQuietPeriod(absl::Minutes(5)), carried));
  CONTROL("xid 4 32");  // already reported: no event
  CONTROL("xid 7 32");  // the marker
  events = recorder_.WaitFor(3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2], Unhealthy(7, 32, events[2].reason));
  // GPU 4's quiet period started under the first monitor (the fake clock
  // has not moved since); GPU 2 is still lost and stays unhealthy.
  clock_.Advance(absl::Minutes(5));
  events = recorder_.WaitFor(5);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[3].gpu_index, 4);
  EXPECT_TRUE(events[3].healthy);
  EXPECT_EQ(events[4].gpu_index, 7);
  EXPECT_TRUE(events[4].healthy);
  // Back, then quiet: GPU 2 recovers after a reset, as it would have under
  // the first monitor.
  ASSERT_NO_FATAL_FAILURE(Restore("2"));
  bool recovered = false;
  for (int i = 0; i < 20 && !recovered; ++i) {
    clock_.Advance(absl::Minutes(5));
    recovered = recorder_.TryWaitFor(6, absl::Seconds(3));
  }
  events = recorder_.WaitFor(6);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[5].gpu_index, 2);
  EXPECT_TRUE(events[5].healthy);
  EXPECT_EQ(events[5].cause, HealthCause::kRecoveredReset);
}

// Discovery that tolerates GPU failures keeps the others and marks the lost
// one, with the record an earlier discovery had.
TEST_F(HealthMonitorTest, DiscoveryKeepsALostGpusRecordAndTheOthers) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  device::Node before;
  before.gpus = gpus_;
  ASSERT_NO_FATAL_FAILURE(Lose("2"));
  absl::StatusOr<device::Node> strict = device::Discover(*lib_);
  ASSERT_FALSE(strict.ok());
  EXPECT_THAT(std::string(strict.status().message()), HasSubstr("GPU 2"));
  device::DiscoveryOptions options;
  options.tolerate_gpu_failures = true;
  absl::StatusOr<device::Node> alone = device::Discover(*lib_, options);
  ASSERT_TRUE(alone.ok()) << alone.status();
  ASSERT_EQ(alone->gpus.size(), 8u);
  EXPECT_THAT(alone->gpus[2].failure, HasSubstr("lost"));
  EXPECT_TRUE(alone->gpus[1].failure.empty());
  EXPECT_EQ(alone->gpus[1], gpus_[1]);
  options.previous = &before;
  absl::StatusOr<device::Node> again = device::Discover(*lib_, options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->gpus[2].uuid, gpus_[2].uuid);
  EXPECT_EQ(again->gpus[2].minor, gpus_[2].minor);
  EXPECT_THAT(again->gpus[2].failure, HasSubstr("lost"));
}

// A GPU that needs a reset but never goes away is not trusted again.
TEST_F(HealthMonitorTest, ResetXidWithoutAResetDoesNotRecover) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor(WithQuietPeriod(absl::ZeroDuration())));
  CONTROL("xid 0 48");
  CONTROL("xid 6 32");
  const std::vector<HealthEvent> events = recorder_.WaitFor(3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].gpu_index, 0);
  EXPECT_EQ(events[1].gpu_index, 6);
  EXPECT_EQ(events[2].gpu_index, 6);  // GPU 0 was probed in the same round
  EXPECT_TRUE(events[2].healthy);
}

// The config file's per-Xid actions change what is fatal and how it
// recovers; the metrics see every Xid and transition. GPU 7's recovery is
// the marker: GPU 6 was probed in the same round, before it.
TEST_F(HealthMonitorTest, ConfigActionsAndMetrics) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  config::Health file;
  file.xids = {{{48}, config::XidAction::kUnhealthy},
               {{32}, config::XidAction::kReset},
               {{31}, config::XidAction::kUnhealthy}};
  MonitorOptions options = FileOptions(file);
  options.quiet_period = absl::ZeroDuration();
  options.clock = &clock_;
  metrics::Registry registry;
  const metrics::GpuletMetrics m = *metrics::GpuletMetrics::Register(registry);
  options.metrics = &m;
  ASSERT_NO_FATAL_FAILURE(StartMonitor(options));
  EXPECT_EQ(m.gpu_healthy->size(), gpus_.size());
  CONTROL("xid 3 13");  // ignored, but counted
  CONTROL("xid 0 48");  // a reset Xid by default; here the quiet period
  CONTROL("xid 6 32");  // a quiet-period Xid by default; here a reset
  CONTROL("xid 7 31");  // ignored by default; here fatal
  const std::vector<HealthEvent> events = recorder_.WaitFor(5);
  ASSERT_EQ(events.size(), 5u);
  std::vector<std::pair<int, bool>> seen;
  for (const HealthEvent& e : events) {
    seen.emplace_back(e.gpu_index, e.healthy);
    if (e.healthy) {
      EXPECT_EQ(e.cause, HealthCause::kRecoveredQuiet) << e.gpu_index;
    }
  }
  EXPECT_THAT(seen,
              ::testing::UnorderedElementsAre(
                  std::pair(0, false), std::pair(0, true), std::pair(6, false),
                  std::pair(7, false), std::pair(7, true)));
  EXPECT_EQ(
      events[4],
      (HealthEvent{
          7, {}, {}, true, 0, events[4].reason, HealthCause::kRecoveredQuiet}));

  EXPECT_EQ(m.xid_events->Value({gpus_[3].uuid, "13"}), 1);
  EXPECT_EQ(m.xid_events->Value({gpus_[0].uuid, "48"}), 1);
  EXPECT_EQ(m.xid_events->Value({gpus_[7].uuid, "31"}), 1);
  EXPECT_EQ(m.health_transitions->Value({"unhealthy", "xid"}), 3);
  EXPECT_EQ(m.health_transitions->Value({"healthy", "quiet_period"}), 2);
  EXPECT_EQ(m.gpu_healthy->Value({gpus_[0].uuid}), 1);
  EXPECT_EQ(m.gpu_healthy->Value({gpus_[6].uuid}), 0);
  monitor_.reset();
  EXPECT_EQ(m.gpu_healthy->size(), 0u);
}

}  // namespace
}  // namespace gpulet::health
