// The fixture of the HealthMonitor tests (health_monitor_test.cc,
// health_monitor_recovery_test.cc): the NVML simulator loaded through the
// production dlopen path for a named machine, faults injected through its
// control socket, and a recorder of the monitor's callbacks that the test
// thread waits on. Absence of a callback is proven by ordering, never by
// sleeping: an event that must be ignored is followed by a fatal marker
// event on another GPU, and the marker must be the next thing reported (one
// event set delivers in order).
//
// Not thread-safe but for Recorder's callback; one test at a time.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sim/control_client.h"
#include "src/base/common/clock.h"
#include "src/gpu/device/discovery.h"
#include "src/gpu/health/health_monitor.h"
#include "src/gpu/testing/sim_test_support.h"

namespace gpulet::health {

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

inline HealthEvent Unhealthy(int gpu, uint64_t xid, std::string reason) {
  HealthEvent event;
  event.gpu_index = gpu;
  event.xid = xid;
  event.reason = std::move(reason);
  event.cause = xid != 0 ? HealthCause::kXid : HealthCause::kDoubleBitEcc;
  return event;
}

class HealthMonitorTest : public nvml::simtest::SimTest {
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

  nvml::simtest::TempDir dir_;
  std::string socket_;
  std::vector<std::string> lost_;
  nvml::LibraryPtr lib_;
  std::vector<device::Gpu> gpus_;
  common::FakeClock clock_;
  Recorder recorder_;
  std::unique_ptr<HealthMonitor> monitor_;  // last: destroyed first
};

#define CONTROL(line) ASSERT_NO_FATAL_FAILURE(Control(line))

inline HealthEvent Recovered(const HealthEvent& event) {
  HealthEvent want;
  want.gpu_index = event.gpu_index;
  want.healthy = true;
  want.reason = event.reason;
  want.cause = event.cause == HealthCause::kRecoveredReset
                   ? HealthCause::kRecoveredReset
                   : HealthCause::kRecoveredQuiet;
  return want;
}

}  // namespace gpulet::health
