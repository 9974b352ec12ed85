// HealthMonitor against the NVML simulator (fixture in
// src/gpu/testing/health_monitor_fixture.h): which events mark which GPU or
// MIG instance unhealthy, failed waits, lost GPUs found by their Xid 79 or
// by a probe, GPUs that cannot be registered, a flood of events, and the
// wait's length.
#include "src/gpu/health/health_monitor.h"

#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/control_client.h"
#include "src/gpu/testing/health_monitor_fixture.h"

namespace gpulet::health {
namespace {

using ::testing::HasSubstr;

TEST_F(HealthMonitorTest, FatalXidMarksThatGpuUnhealthy) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  CONTROL("xid 3 79");
  const std::vector<HealthEvent> events = recorder_.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], Unhealthy(3, 79, "Xid 79 (GPU has fallen off the bus)"));
}

TEST_F(HealthMonitorTest, IgnoredXidIsNotReported) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  CONTROL("xid 2 13");
  CONTROL("xid 2 109");
  CONTROL("xid 5 48");  // the marker
  const std::vector<HealthEvent> events = recorder_.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], Unhealthy(5, 48, "Xid 48 (Double Bit ECC Error)"));
}

TEST_F(HealthMonitorTest, DoubleBitEccIsFatalSingleBitIsNot) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  CONTROL("sbe 6");
  CONTROL("dbe 7");
  const std::vector<HealthEvent> events = recorder_.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], Unhealthy(7, 0, "double-bit ECC error"));
}

TEST_F(HealthMonitorTest, EachGpuIsReportedOnce) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  CONTROL("xid 1 79");
  CONTROL("xid 1 48");
  CONTROL("dbe 1");
  CONTROL("xid 4 94");
  const std::vector<HealthEvent> events = recorder_.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].gpu_index, 1);
  EXPECT_EQ(events[0].xid, 79u);
  EXPECT_EQ(events[1], Unhealthy(4, 94, "Xid 94 (Contained ECC error)"));
}

TEST_F(HealthMonitorTest, MigScopedXidsCarryInstanceIds) {
  ASSERT_NO_FATAL_FAILURE(Load("a100-mig"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  // GPU 0's GPU instance 1, by MIG UUID: Xid 94 is fatal, 31 ignored.
  CONTROL("xid MIG-ec8cb5f9-6cc3-5bb2-bdeb-b84397098347 94");
  CONTROL("xid MIG-ec8cb5f9-6cc3-5bb2-bdeb-b84397098347 31");
  CONTROL("xid 1 95 7 0");
  // The whole GPU 0, which then covers its GPU instance 5.
  CONTROL("xid 0 79");
  CONTROL("xid MIG-4dfe8ed0-b9b4-559c-b70e-c4d0dd21e338 94");
  CONTROL("xid 3 79");  // the marker
  const std::vector<HealthEvent> events = recorder_.WaitFor(4);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].gpu_index, 0);
  EXPECT_EQ(events[0].xid, 94u);
  EXPECT_EQ(events[0].gpu_instance_id, 1u);
  EXPECT_EQ(events[0].compute_instance_id, 0u);
  EXPECT_EQ(events[1].gpu_index, 1);
  EXPECT_EQ(events[1].xid, 95u);
  EXPECT_EQ(events[1].gpu_instance_id, 7u);
  EXPECT_EQ(events[1].compute_instance_id, 0u);
  EXPECT_EQ(events[2], Unhealthy(0, 79, "Xid 79 (GPU has fallen off the bus)"));
  EXPECT_EQ(events[3].gpu_index, 3);
  EXPECT_FALSE(events[3].gpu_instance_id.has_value());
}

TEST_F(HealthMonitorTest, FailedWaitsAreRetriedAndChangeNothing) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  CONTROL("wait-error 999 3");
  CONTROL("xid 4 79");
  std::vector<HealthEvent> events = recorder_.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu_index, 4);
  // NVML_ERROR_GPU_IS_LOST (15): NVIDIA marks every GPU unhealthy here.
  CONTROL("wait-error 15 2");
  CONTROL("xid 5 79");
  events = recorder_.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].gpu_index, 5);
}

TEST_F(HealthMonitorTest, LostGpuIsReportedThroughItsXid79) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  ASSERT_NO_FATAL_FAILURE(Lose("1"));
  const std::vector<HealthEvent> events = recorder_.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], Unhealthy(1, 79, "Xid 79 (GPU has fallen off the bus)"));
}

// The Xid 79 of a GPU lost while event waits fail can be dropped from the
// driver's full queue: the monitor then finds the lost GPU by probing. Xid
// 79 is ignored here so that only the probe can find it.
TEST_F(HealthMonitorTest, GpuLostWhileWaitsFailIsFoundByAProbe) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  MonitorOptions options = WithQuietPeriod(absl::ZeroDuration());
  options.ignored_xids.insert(79);
  ASSERT_NO_FATAL_FAILURE(StartMonitor(std::move(options)));
  CONTROL("wait-error 999 1");
  ASSERT_NO_FATAL_FAILURE(Lose("2"));
  std::vector<HealthEvent> events = recorder_.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu_index, 2);
  EXPECT_FALSE(events[0].healthy);
  EXPECT_EQ(events[0].cause, HealthCause::kLost);
  EXPECT_THAT(events[0].reason, HasSubstr("GPU is lost"));
  // Back once it is there again, as after its Xid 79.
  ASSERT_NO_FATAL_FAILURE(Restore("2"));
  events = recorder_.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].gpu_index, 2);
  EXPECT_TRUE(events[1].healthy);
}

// A GPU lost and back while event waits fail has its Xid 79 read late,
// once it answers again: it recovers after the quiet period rather than
// waiting for a second reset. (If the monitor reads the Xid while the GPU
// is still lost, it recovers after the restore all the same.)
TEST_F(HealthMonitorTest, XidReadAfterTheGpuCameBackStillRecovers) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor(WithQuietPeriod(absl::ZeroDuration())));
  CONTROL("wait-error 999 3");
  ASSERT_NO_FATAL_FAILURE(Lose("2"));
  ASSERT_NO_FATAL_FAILURE(Restore("2"));
  // However the probes and the late Xid interleave (a probe during the
  // failed waits may catch the GPU lost first), the GPU is marked
  // unhealthy and then healthy, and in the end the monitor is idle: the
  // long wait means the queue is empty (the Xid 79 was read) and no GPU
  // is unhealthy.
  std::vector<HealthEvent> events = recorder_.WaitFor(2);
  ASSERT_GE(events.size(), 2u) << "GPU 2 stayed unhealthy";
  EXPECT_TRUE(WaitForBlockedWaits("[1800000]")) << "GPU 2 stayed unhealthy";
  events = recorder_.WaitFor(0);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().gpu_index, 2);
  EXPECT_TRUE(events.back().healthy);
}

// A GPU whose Xid 79 is read while it is lost and that comes back before
// the monitor's next probe round has been reset all the same.
TEST_F(HealthMonitorTest, GpuBackBeforeTheNextProbeRecovers) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor(WithQuietPeriod(absl::Minutes(5))));
  // A fault on GPU 5 has the monitor probe now, so that the next probe
  // round is a second away when GPU 2 is lost and comes back.
  CONTROL("xid 5 32");
  std::vector<HealthEvent> events = recorder_.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  ASSERT_NO_FATAL_FAILURE(Lose("2"));
  events = recorder_.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1], Unhealthy(2, 79, "Xid 79 (GPU has fallen off the bus)"));
  ASSERT_NO_FATAL_FAILURE(Restore("2"));
  // The round that recovers GPU 5 probes GPU 2 too and sees it back: its
  // quiet period starts there at the latest.
  clock_.Advance(absl::Minutes(6));
  events = recorder_.WaitFor(3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].gpu_index, 5);
  EXPECT_TRUE(events[2].healthy);
  clock_.Advance(absl::Minutes(6));
  events = recorder_.WaitFor(4);
  ASSERT_EQ(events.size(), 4u) << "GPU 2 stayed unhealthy";
  EXPECT_EQ(events[3].gpu_index, 2);
  EXPECT_TRUE(events[3].healthy);
}

TEST_F(HealthMonitorTest, GpuThatCannotBeRegisteredIsReportedOnce) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(Lose("2"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  CONTROL("xid 3 79");  // the other GPUs are watched
  const std::vector<HealthEvent> events = recorder_.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].gpu_index, 2);
  EXPECT_EQ(events[0].xid, 0u);
  EXPECT_FALSE(events[0].healthy);
  EXPECT_THAT(events[0].reason, HasSubstr("cannot watch it"));
  EXPECT_THAT(events[0].reason, HasSubstr("NVML_ERROR_GPU_IS_LOST"));
  EXPECT_EQ(events[1].gpu_index, 3);
}

TEST_F(HealthMonitorTest, GpuWithoutHealthEventsIsLeftUnmonitored) {
  const std::string machine = dir_.path() + "/m.yaml";
  std::ofstream(machine) << R"(description: one T4 without Xid events
gpuDefaults: {model: T4}
gpus:
  - {uuid: GPU-11111111-2222-3333-4444-555555555555, busId: "00000000:3B:00.0",
     events: [pstate, clock]}
  - {uuid: GPU-11111111-2222-3333-4444-666666666666, busId: "00000000:3C:00.0",
     events: [xid]}
)";
  ASSERT_NO_FATAL_FAILURE(Load(machine));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  CONTROL("xid 0 79");  // reaches no event set
  CONTROL("xid 1 79");
  const std::vector<HealthEvent> events = recorder_.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu_index, 1);
}

TEST_F(HealthMonitorTest, EnabledXidsStillCountWhenXidChecksAreDisabled) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  absl::StatusOr<MonitorOptions> options = ParseHealthEnv("xids", "79");
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_NO_FATAL_FAILURE(StartMonitor(*options));
  CONTROL("xid 0 48");
  CONTROL("dbe 2");
  CONTROL("xid 1 79");
  const std::vector<HealthEvent> events = recorder_.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], Unhealthy(2, 0, "double-bit ECC error"));
  EXPECT_EQ(events[1].gpu_index, 1);
}

TEST_F(HealthMonitorTest, DisabledMonitorRegistersNothing) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  absl::StatusOr<MonitorOptions> options = ParseHealthEnv("all", nullptr);
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_NO_FATAL_FAILURE(StartMonitor(*options));
  absl::StatusOr<std::string> status =
      sim::SendControlCommand(socket_, "status");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_THAT(*status, HasSubstr("\"event_sets\":0"));
}

TEST_F(HealthMonitorTest, NoGpusStartsNothing) {
  ASSERT_NO_FATAL_FAILURE(Load("none"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  EXPECT_NE(monitor_, nullptr);
}

// 10,000 Xids across the 8 GPUs, faster than the set's 1024-event queue may
// hold: GPUs 0, 2, 4, 6 get a fatal Xid every 80 events (so some survive any
// overflow), the odd GPUs only ignored ones. Each fatal GPU must be reported
// exactly once, and nothing else.
TEST_F(HealthMonitorTest, FloodOfXidsIsHandled) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor());
  constexpr uint64_t kIgnored[] = {13, 31, 43, 45, 68, 109};
  int failed = 0;
  for (int i = 0; i < 10000; ++i) {
    const int gpu = i % 8;
    const bool fatal = gpu % 2 == 0 && (i / 8) % 10 == 0;
    const uint64_t xid = fatal ? 79 : kIgnored[(i / 8) % 6];
    if (!sim::SendControlCommand(socket_, absl::StrCat("xid ", gpu, " ", xid))
             .ok()) {
      ++failed;
    }
  }
  EXPECT_EQ(failed, 0);
  std::vector<HealthEvent> events = recorder_.WaitFor(4);
  CONTROL("dbe 1");  // the marker
  events = recorder_.WaitFor(5);
  ASSERT_EQ(events.size(), 5u);
  std::set<int> fatal_gpus;
  for (int i = 0; i < 4; ++i) {
    fatal_gpus.insert(events[i].gpu_index);
    EXPECT_EQ(events[i].xid, 79u);
  }
  EXPECT_EQ(fatal_gpus, (std::set<int>{0, 2, 4, 6}));
  EXPECT_EQ(events[4], Unhealthy(1, 0, "double-bit ECC error"));
}

// While every GPU is healthy the monitor waits 30 minutes (nothing to
// probe); while one is unhealthy it waits one second, so each timeout is a
// probe round; once the GPU recovered it waits long again.
TEST_F(HealthMonitorTest, WaitsLongUnlessAGpuIsUnhealthy) {
  ASSERT_NO_FATAL_FAILURE(Load("dgx-h100"));
  ASSERT_NO_FATAL_FAILURE(StartMonitor(WithQuietPeriod(absl::Minutes(5))));
  EXPECT_TRUE(WaitForBlockedWaits("[1800000]"));
  CONTROL("xid 1 32");
  ASSERT_EQ(recorder_.WaitFor(1).size(), 1u);
  EXPECT_TRUE(WaitForBlockedWaits("[1000]"));
  clock_.Advance(absl::Minutes(6));
  std::vector<HealthEvent> events = recorder_.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(events[1].healthy);
  EXPECT_TRUE(WaitForBlockedWaits("[1800000]"));
}

}  // namespace
}  // namespace gpulet::health
