// HealthMonitor against the NVML simulator, loaded through the production
// dlopen path, with faults injected through the simulator's control socket.
// Absence of a callback is proven by ordering, never by sleeping: an event
// that must be ignored is followed by a fatal marker event on another GPU,
// and the marker must be the next thing reported (one event set delivers in
// order).
#include "src/gpu/health/health_monitor.h"

#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/common/clock.h"
#include "src/gpu/device/discovery.h"
#include "src/gpu/health/health_config.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "sim/control_client.h"
#include "src/gpu/testing/sim_test_support.h"

namespace gpulet::health {
namespace {

using ::gpulet::nvml::simtest::SimTest;
using ::gpulet::nvml::simtest::TempDir;
using ::testing::HasSubstr;

// Collects callbacks; the test thread waits for them.
class Recorder {
 public:
  HealthMonitor::Callback Callback() {
    return [this](const HealthEvent& event) {
      absl::MutexLock lock(&mu_);
      events_.push_back(event);
    };
  }

  // Whether there are at least `n` events within `timeout` (no failure).
  bool TryWaitFor(size_t n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    const auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return events_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }

  // Every event so far, once there are at least `n` (or after 20 s, failing
  // the test).
  std::vector<HealthEvent> WaitFor(size_t n) {
    absl::MutexLock lock(&mu_);
    const auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return events_.size() >= n;
    };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(20));
    EXPECT_GE(events_.size(), n) << "timed out waiting for health events";
    return events_;
  }

 private:
  absl::Mutex mu_;
  std::vector<HealthEvent> events_ ABSL_GUARDED_BY(mu_);
};

HealthEvent Unhealthy(int gpu, uint64_t xid, std::string reason) {
  HealthEvent event;
  event.gpu_index = gpu;
  event.xid = xid;
  event.reason = std::move(reason);
  event.cause = xid != 0 ? HealthCause::kXid : HealthCause::kDoubleBitEcc;
  return event;
}

class HealthMonitorTest : public SimTest {
 protected:
  void TearDown() override {
    const auto start = std::chrono::steady_clock::now();
    monitor_.reset();
    const auto elapsed = std::chrono::steady_clock::now() - start;
    // A stop interrupts the wait (30 minutes while idle): far less than
    // this bound, which only catches an interrupt that did not work.
    EXPECT_LT(elapsed, std::chrono::seconds(5));
    RecordProperty(
        "stop_ms",
        static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(elapsed)
                .count()));
    // Lost GPUs stay lost for the whole process (by UUID).
    for (const std::string& gpu : lost_) {
      EXPECT_TRUE(sim::SendControlCommand(socket_, "restore " + gpu).ok());
    }
    lib_.reset();
  }

  // Loads the simulator for `machine` with a control socket and discovers
  // its GPUs.
  void Load(const std::string& machine) {
    socket_ = dir_.path() + "/sim.sock";
    ::setenv("GPULET_SIM_SOCKET", socket_.c_str(), 1);
    lib_ = OpenSim(machine);
    ASSERT_NE(lib_, nullptr);
    absl::StatusOr<device::Node> node = device::Discover(*lib_);
    ASSERT_TRUE(node.ok()) << node.status();
    gpus_ = node->gpus;
  }

  void StartMonitor(MonitorOptions options = {}, CarryOver seed = {}) {
    absl::StatusOr<std::unique_ptr<HealthMonitor>> monitor =
        HealthMonitor::Start(*lib_, gpus_, std::move(options),
                             recorder_.Callback(), std::move(seed));
    ASSERT_TRUE(monitor.ok()) << monitor.status();
    monitor_ = std::move(*monitor);
  }

  void Control(const std::string& line) {
    absl::StatusOr<std::string> reply = sim::SendControlCommand(socket_, line);
    ASSERT_TRUE(reply.ok()) << line << ": " << reply.status();
  }

  // Asks the simulator until the NVML waits blocked now are `want` (e.g.
  // "[1000]"); false after 20 s.
  bool WaitForBlockedWaits(const std::string& want) {
    const std::string field = "\"blocked_timeouts_ms\":" + want;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      absl::StatusOr<std::string> status =
          sim::SendControlCommand(socket_, "status");
      if (status.ok() && status->find(field) != std::string::npos) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  }

  void Lose(const std::string& gpu) {
    lost_.push_back(gpu);
    Control("lose " + gpu);
  }

  void Restore(const std::string& gpu) {
    std::erase(lost_, gpu);
    Control("restore " + gpu);
  }

  // Options whose quiet period runs on clock_.
  MonitorOptions WithQuietPeriod(absl::Duration quiet_period) {
    MonitorOptions options;
    options.quiet_period = quiet_period;
    options.clock = &clock_;
    return options;
  }

  TempDir dir_;
  std::string socket_;
  std::vector<std::string> lost_;
  nvml::LibraryPtr lib_;
  std::vector<device::Gpu> gpus_;
  common::FakeClock clock_;
  Recorder recorder_;
  std::unique_ptr<HealthMonitor> monitor_;  // last: destroyed first
};

#define CONTROL(line) ASSERT_NO_FATAL_FAILURE(Control(line))

HealthEvent Recovered(const HealthEvent& event) {
  HealthEvent want;
  want.gpu_index = event.gpu_index;
  want.healthy = true;
  want.reason = event.reason;
  want.cause = event.cause == HealthCause::kRecoveredReset
                   ? HealthCause::kRecoveredReset
                   : HealthCause::kRecoveredQuiet;
  return want;
}

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
  EXPECT_THAT(seen, ::testing::UnorderedElementsAre(
                        std::pair(0, false), std::pair(0, true),
                        std::pair(6, false), std::pair(7, false),
                        std::pair(7, true)));
  EXPECT_EQ(events[4], (HealthEvent{7, {}, {}, true, 0, events[4].reason,
                                    HealthCause::kRecoveredQuiet}));

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
