#include "src/gpu/health/health_monitor.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "src/base/common/clock.h"
#include "src/base/common/logging.h"
#include "src/gpu/health/gpu_watch.h"
#include "src/gpu/health/harmless_event_log.h"
#include "src/gpu/health/health_metrics.h"
#include "src/gpu/health/health_reports.h"
#include "src/gpu/health/recovery_policy.h"

namespace gpulet::health {
namespace {

// The wait while some GPU is unhealthy: it is probed at every timeout.
constexpr uint32_t kWaitTimeoutMs = 1000;
// The wait while nothing is pending. A stop interrupts it with WakeSignal()
// (NVML returns NVML_ERROR_TIMEOUT when an interrupt arrives), so it only
// bounds how long a driver that ignored the signal would delay a stop. 30
// minutes stays within 32 bits even counted in microseconds, in case the
// driver converts it.
constexpr uint32_t kIdleWaitMs = 30 * 60 * 1000;
// How long a stop waits before sending the wake-up signal again (the first
// one may arrive just before the thread enters the wait), doubling up to
// kMaxInterruptEvery.
constexpr std::chrono::milliseconds kFirstInterruptEvery{1};
constexpr std::chrono::milliseconds kMaxInterruptEvery{100};
constexpr std::chrono::milliseconds kFirstBackoff{100};
constexpr std::chrono::milliseconds kMaxBackoff{5000};
// Unhealthy GPUs are probed at every idle wait timeout, and at least this
// often while events keep the waits from timing out.
constexpr std::chrono::milliseconds kProbeInterval{1000};

// Keeps the GPUs' health gauges (all healthy) while nothing is watched.
class IdleMonitor final : public HealthMonitor {
 public:
  IdleMonitor(const metrics::GpuletMetrics* metrics,
              const std::vector<device::Gpu>& gpus)
      : metrics_(metrics, gpus) {}
  // Nothing is watched, so nothing stays unhealthy.
  CarryOver Stop() override { return {}; }

 private:
  HealthMetrics metrics_;
};

class EventMonitor final : public HealthMonitor {
 public:
  EventMonitor(nvml::Library& lib, const std::vector<device::Gpu>& gpus,
               nvml::EventSetPtr events, Registration registration,
               MonitorOptions options, Callback callback, CarryOver seed)
      : metrics_(options.metrics, gpus),
        lib_(lib),
        events_(std::move(events)),
        gpus_(std::move(registration.gpus)),
        unregistered_(std::move(registration.failed)),
        options_(std::move(options)),
        clock_(options_.clock != nullptr ? *options_.clock
                                         : common::RealClock::Get()),
        callback_(std::move(callback)),
        recovery_(options_.quiet_period),
        thread_([this, failures = std::move(registration.failures),
                 seed = std::move(seed)](std::stop_token stop) {
          UnblockWakeSignal();
          Seed(seed);
          Run(stop, failures);
          std::lock_guard lock(exit_mu_);
          exited_ = true;
          exit_cv_.notify_all();
        }) {}

  ~EventMonitor() override { Stop(); }

  CarryOver Stop() override {
    if (thread_.joinable()) {
      thread_.request_stop();
      Interrupt();
      thread_.join();
    }
    CarryOver out;
    out.recovery = recovery_.Export();
    out.reported = reports_.Export();
    return out;
  }

 private:
  // First thing on the thread: takes over an earlier monitor's state.
  void Seed(const CarryOver& seed) {
    for (const RecoveryState& state : seed.recovery) recovery_.Import(state);
    for (const HealthEvent& event : seed.reported) {
      reports_.Restore(event);
      metrics_.SetHealthy(event.gpu_index, false);
    }
    if (!seed.reported.empty()) {
      GPULET_VLOG(1) << "health monitor: continuing with "
                     << seed.reported.size()
                     << " unhealthy report(s) carried over";
    }
  }
  void Run(std::stop_token stop, const std::vector<HealthEvent>& failures);
  void OnEvent(const nvml::Event& event);
  void Report(const HealthEvent& event);
  // Probes the unhealthy GPUs when `idle` or kProbeInterval has passed since
  // the last round, and reports those that recovered.
  void MaybeProbe(bool idle);
  void Recover(int gpu, const std::string& reason, HealthCause cause);
  void RetryRegistrations(const std::vector<int>& unhealthy,
                          std::vector<std::pair<int, ProbeResult>>& results);
  // Blocks for `delay` or until stop is requested; false on stop.
  bool Sleep(std::stop_token stop, std::chrono::milliseconds delay);
  // Waits for the next event, as long as nothing is pending; nullopt when
  // stop was requested.
  std::optional<absl::StatusOr<nvml::Event>> WaitForEvent(
      const std::stop_token& stop);
  // Signals the thread until it has left Run (a stop was requested).
  void Interrupt();
  // Probes every watched GPU not already unhealthy and reports the ones
  // found lost: the Xid 79 of a GPU lost while event waits failed may have
  // been dropped from the driver's full queue.
  void CheckForLostGpus();

  HealthMetrics metrics_;
  nvml::Library& lib_;
  const nvml::EventSetPtr events_;
  // Monitor thread only once it runs (registration happens between waits).
  GpuOfHandle gpus_;
  // GPUs whose registration failed; tried again at every probe round.
  std::vector<device::Gpu> unregistered_;
  const MonitorOptions options_;
  const common::Clock& clock_;
  const Callback callback_;

  // Touched by the monitor thread only.
  RecoveryPolicy recovery_;
  std::chrono::steady_clock::time_point last_probe_{};
  HealthReports reports_;
  HarmlessEventLog harmless_;

  std::mutex sleep_mu_;
  std::condition_variable_any sleep_cv_;
  // True while the thread is in (or about to enter) the NVML wait: only
  // then may the wake-up signal interrupt it.
  std::atomic<bool> waiting_{false};
  std::mutex exit_mu_;
  std::condition_variable exit_cv_;
  bool exited_ = false;  // GUARDED_BY(exit_mu_); the thread left Run
  // Last: starts after every member above is ready; joined first.
  std::jthread thread_;
};

void EventMonitor::Run(std::stop_token stop,
                       const std::vector<HealthEvent>& failures) {
  const std::vector<int> carried = recovery_.Unhealthy();
  for (const HealthEvent& failure : failures) {
    // A GPU that cannot be watched is a fault like any other: it recovers
    // once it can be registered and the quiet period has passed. A GPU
    // already unhealthy (carried over) keeps its fault and its reason.
    if (std::find(carried.begin(), carried.end(), failure.gpu_index) ==
        carried.end()) {
      recovery_.OnFault(failure.gpu_index, /*needs_reset=*/false,
                        failure.reason, clock_.Now());
    }
    Report(failure);
  }
  if (gpus_.empty() && unregistered_.empty()) return;
  std::chrono::milliseconds backoff = kFirstBackoff;
  int failed_waits = 0;
  while (!stop.stop_requested()) {
    std::optional<absl::StatusOr<nvml::Event>> waited = WaitForEvent(stop);
    if (!waited.has_value()) return;
    absl::StatusOr<nvml::Event>& event = *waited;
    if (event.ok() || absl::IsDeadlineExceeded(event.status())) {
      if (failed_waits > 0) {
        GPULET_LOG(INFO) << "waiting for NVML events works again after "
                         << failed_waits << " failed attempts";
        failed_waits = 0;
        backoff = kFirstBackoff;
        // Events raised while the waits failed may never arrive (the
        // driver's queue is bounded): look at every GPU once.
        CheckForLostGpus();
      }
      if (event.ok()) OnEvent(*event);
      MaybeProbe(!event.ok());
      continue;
    }
    // NVIDIA's plugin marks every GPU unhealthy here; a failed wait says
    // nothing about any one GPU (a lost GPU also raises its own Xid 79).
    if (failed_waits++ == 0) {
      GPULET_LOG(WARNING) << "waiting for NVML events failed: "
                          << event.status() << "; retrying with backoff (up to "
                          << kMaxBackoff.count()
                          << " ms); probing the GPUs meanwhile";
    } else {
      GPULET_VLOG(1) << "waiting for NVML events failed again (" << failed_waits
                     << "): " << event.status();
    }
    CheckForLostGpus();
    MaybeProbe(false);
    if (!Sleep(stop, backoff)) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

void EventMonitor::OnEvent(const nvml::Event& event) {
  const auto it = gpus_.find(event.device);
  if (it == gpus_.end()) {
    GPULET_VLOG(1) << "ignoring an NVML event of type " << event.type
                   << " for a device that is not watched";
    return;
  }
  if ((event.type & nvmlEventTypeXidCriticalError) != 0) {
    metrics_.OnXid(it->second, event.data);
  }
  if (std::optional<HealthEvent> unhealthy =
          Decide(event, it->second, options_)) {
    // Also when already reported: a new fault restarts the quiet period.
    const bool needs_reset = NeedsReset(options_, unhealthy->xid);
    const absl::Time at = clock_.Now();
    // Xid 79 is the loss itself (the GPU fell off the bus): it counts as
    // seen, so the GPU recovers once it answers again and the quiet period
    // has passed. Waiting for a probe to see the loss would keep it
    // unhealthy for good when it came back before the next probe round, or
    // before the event was read at all (it waits in the queue while waits
    // fail).
    recovery_.OnFault(
        it->second, needs_reset, unhealthy->reason, at,
        /*is_loss=*/needs_reset && unhealthy->xid == kXidFallenOffTheBus);
    Report(*unhealthy);
  } else {
    harmless_.Log(event, it->second, options_);
  }
}

void EventMonitor::Report(const HealthEvent& event) {
  // A GPU already unhealthy as a whole covers each of its MIG devices.
  if (!reports_.Add(event)) {
    GPULET_VLOG(1) << EventSubject(event) << " is already unhealthy; "
                   << event.reason;
    return;
  }
  GPULET_LOG(WARNING) << "marking " << EventSubject(event)
                      << " unhealthy: " << event.reason;
  metrics_.OnTransition(event);
  callback_(event);
}

void EventMonitor::CheckForLostGpus() {
  const std::vector<int> unhealthy = recovery_.Unhealthy();
  std::vector<int> lost;
  for (const auto& [handle, gpu] : gpus_) {
    if (std::find(unhealthy.begin(), unhealthy.end(), gpu) != unhealthy.end())
      continue;
    if (ProbeGpu(lib_, handle, gpu) == ProbeResult::kLost) lost.push_back(gpu);
  }
  std::sort(lost.begin(), lost.end());
  for (int gpu : lost) {
    HealthEvent event;
    event.gpu_index = gpu;
    event.cause = HealthCause::kLost;
    event.reason =
        "GPU is lost (found by a probe while NVML events could not be read)";
    // As its Xid 79 would have: back only once the GPU is there again.
    // This probe saw it lost, as a reset's first half.
    recovery_.OnFault(gpu, NeedsReset(options_, kXidFallenOffTheBus),
                      event.reason, clock_.Now(), /*is_loss=*/true);
    Report(event);
  }
}

void EventMonitor::MaybeProbe(bool idle) {
  const auto now = std::chrono::steady_clock::now();
  if (!idle && now - last_probe_ < kProbeInterval) return;
  last_probe_ = now;
  const std::vector<int> unhealthy = recovery_.Unhealthy();
  if (unhealthy.empty()) return;
  // Probe every GPU first, so one round sees them all at the same instant.
  std::vector<std::pair<int, ProbeResult>> results;
  for (const auto& [handle, gpu] : gpus_) {
    if (std::find(unhealthy.begin(), unhealthy.end(), gpu) != unhealthy.end()) {
      results.emplace_back(gpu, ProbeGpu(lib_, handle, gpu));
    }
  }
  RetryRegistrations(unhealthy, results);
  std::sort(results.begin(), results.end());
  const absl::Time at = clock_.Now();
  for (const auto& [gpu, result] : results) {
    const HealthCause cause = recovery_.NeedsResetToRecover(gpu)
                                  ? HealthCause::kRecoveredReset
                                  : HealthCause::kRecoveredQuiet;
    if (std::optional<std::string> why = recovery_.OnProbe(gpu, result, at)) {
      Recover(gpu, *why, cause);
    }
  }
}

// A GPU that could not be registered (lost when the monitor started, say)
// is registered again while it is unhealthy; until that works its probe
// result is the registration's failure.
void EventMonitor::RetryRegistrations(
    const std::vector<int>& unhealthy,
    std::vector<std::pair<int, ProbeResult>>& results) {
  for (auto it = unregistered_.begin(); it != unregistered_.end();) {
    const int index = static_cast<int>(it->index);
    if (std::find(unhealthy.begin(), unhealthy.end(), index) ==
        unhealthy.end()) {
      ++it;
      continue;
    }
    absl::StatusOr<nvml::Device> handle = RegisterGpu(lib_, *events_, *it);
    if (!handle.ok()) {
      GPULET_VLOG(1) << "registering GPU " << index
                     << " for health events again: " << handle.status();
      results.emplace_back(index, absl::IsUnavailable(handle.status())
                                      ? ProbeResult::kLost
                                      : ProbeResult::kFailed);
      ++it;
      continue;
    }
    GPULET_LOG(INFO) << "GPU " << index << " is watched for health events now";
    if (*handle != nullptr) {
      gpus_.emplace(*handle, index);
      results.emplace_back(index, ProbeGpu(lib_, *handle, index));
    } else {
      results.emplace_back(index, ProbeResult::kOk);
    }
    it = unregistered_.erase(it);
  }
}

void EventMonitor::Recover(int gpu, const std::string& reason,
                           HealthCause cause) {
  reports_.ForgetGpu(gpu);
  HealthEvent event;
  event.gpu_index = gpu;
  event.healthy = true;
  event.reason = reason;
  event.cause = cause;
  GPULET_LOG(INFO) << "marking GPU " << gpu << " healthy: " << reason;
  metrics_.OnTransition(event);
  callback_(event);
}

std::optional<absl::StatusOr<nvml::Event>> EventMonitor::WaitForEvent(
    const std::stop_token& stop) {
  // Unhealthy GPUs are probed at every timeout; otherwise nothing but an
  // event or a stop has anything to do here.
  const uint32_t timeout_ms =
      recovery_.Unhealthy().empty() ? kIdleWaitMs : kWaitTimeoutMs;
  // Set before looking at the stop request, so a stopper that requested
  // the stop either is seen here or sees waiting_ and signals.
  waiting_ = true;
  if (stop.stop_requested()) {
    waiting_ = false;
    return std::nullopt;
  }
  absl::StatusOr<nvml::Event> event = events_->Wait(timeout_ms);
  waiting_ = false;
  if (stop.stop_requested()) return std::nullopt;
  return event;
}

void EventMonitor::Interrupt() {
  std::unique_lock lock(exit_mu_);
  std::chrono::milliseconds every = kFirstInterruptEvery;
  while (!exited_) {
    // Only the wait is interrupted: another call of the thread's (a probe,
    // a log write) is left alone and the thread sees the stop after it.
    // A signal sent just before the thread entered the wait is lost,
    // hence the repetition.
    if (waiting_) pthread_kill(thread_.native_handle(), WakeSignal());
    exit_cv_.wait_for(lock, every);
    every = std::min(every * 2, kMaxInterruptEvery);
  }
}

bool EventMonitor::Sleep(std::stop_token stop,
                         std::chrono::milliseconds delay) {
  std::unique_lock lock(sleep_mu_);
  sleep_cv_.wait_for(lock, stop, delay, [] { return false; });
  return !stop.stop_requested();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HealthMonitor>> HealthMonitor::Start(
    nvml::Library& lib, const std::vector<device::Gpu>& gpus,
    MonitorOptions options, Callback callback, CarryOver seed) {
  if (options.disabled) {
    GPULET_LOG(INFO) << "GPU health checks are disabled";
    return std::make_unique<IdleMonitor>(options.metrics, gpus);
  }
  if (gpus.empty()) return std::make_unique<IdleMonitor>(options.metrics, gpus);
  InstallWakeSignalHandler();
  absl::StatusOr<nvml::EventSetPtr> events = lib.EventSetCreate();
  if (!events.ok()) return events.status();
  Registration registration = RegisterAll(lib, **events, gpus);
  GPULET_LOG(INFO) << "health monitor: watching " << registration.gpus.size()
                   << " of " << gpus.size() << " GPUs; "
                   << DescribeOptions(options);
  return std::make_unique<EventMonitor>(
      lib, gpus, std::move(*events), std::move(registration),
      std::move(options), std::move(callback), std::move(seed));
}

}  // namespace gpulet::health
