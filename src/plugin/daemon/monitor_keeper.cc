#include "src/plugin/daemon/monitor_keeper.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/logging.h"

namespace gpulet::daemon {
namespace {

std::vector<std::tuple<unsigned, std::string, bool>> GpuKeys(
    const device::Node& node) {
  std::vector<std::tuple<unsigned, std::string, bool>> keys;
  for (const device::Gpu& gpu : node.gpus) {
    keys.emplace_back(gpu.index, gpu.uuid, !gpu.failure.empty());
  }
  return keys;
}

// A GPU that failed discovery is a fault the monitor must probe: it may
// never have seen one (the GPU's Xid 79 dropped from a full event queue, or
// a query refused), and then nothing but the next reload would bring the
// GPU back. Its recovery starts now, as after a fault that needs no reset
// (a lost GPU must answer again first); when it recovers, the monitor's
// healthy report clears the book's discovery failure. Only the recovery
// state is seeded, not a report: the book already holds the failure, and a
// real fault before the recovery must still be reported. A GPU the monitor
// already tracks keeps its own fault.
void SeedDiscoveryFailures(const device::Node& node,
                           const health::MonitorOptions& options,
                           health::CarryOver& seed) {
  const absl::Time now = options.clock != nullptr
                             ? options.clock->Now()
                             : common::RealClock::Get().Now();
  for (const device::Gpu& gpu : node.gpus) {
    const int index = static_cast<int>(gpu.index);
    if (gpu.failure.empty() || gpu.uuid.empty() ||
        std::any_of(
            seed.recovery.begin(), seed.recovery.end(),
            [&](const health::RecoveryState& r) { return r.gpu == index; })) {
      continue;
    }
    health::RecoveryState state;
    state.gpu = index;
    state.quiet_since = now;
    state.reason = absl::StrCat("discovery failed: ", gpu.failure);
    seed.recovery.push_back(std::move(state));
  }
}

}  // namespace

MonitorKeeper::MonitorKeeper(const metrics::GpuletMetrics* metrics,
                             ServedResources& served)
    : metrics_(metrics), served_(served) {}

void MonitorKeeper::Ensure(nvml::Library& lib,
                           const health::MonitorOptions& health,
                           const device::Node& node) {
  health::MonitorOptions options = health;
  options.metrics = metrics_;
  const auto gpus = GpuKeys(node);
  if (monitor_ != nullptr && gpus == gpus_ && options == options_) return;
  health::CarryOver seed;
  if (monitor_ != nullptr) {
    GPULET_LOG(INFO) << "the GPUs or the health options changed; the health "
                        "monitor restarts with the current health state";
    seed = monitor_->Stop();
    monitor_.reset();
  }
  // Nothing watches the GPUs any more, so nothing could bring them back.
  if (options.disabled) served_.KeepOnlyDiscoveryFailures();
  SeedDiscoveryFailures(node, options, seed);
  std::vector<device::Gpu> watched;
  for (const device::Gpu& gpu : node.gpus) {
    if (!gpu.uuid.empty()) watched.push_back(gpu);
  }
  absl::StatusOr<std::unique_ptr<health::HealthMonitor>> monitor =
      health::HealthMonitor::Start(
          lib, watched, options,
          [this](const health::HealthEvent& e) { served_.OnGpuHealth(e); },
          std::move(seed));
  gpus_ = gpus;
  options_ = options;
  if (monitor.ok()) {
    monitor_ = *std::move(monitor);
  } else {
    GPULET_LOG(ERROR) << "health checks are off: "
                      << monitor.status().message();
  }
}

void MonitorKeeper::Stop() {
  if (monitor_ != nullptr) monitor_->Stop();
  monitor_.reset();
  gpus_.clear();
}

}  // namespace gpulet::daemon
