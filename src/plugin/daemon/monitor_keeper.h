// MonitorKeeper: the health monitor (health::HealthMonitor) over the
// node's GPUs, its events going to ServedResources::OnGpuHealth. A monitor
// is kept across reloads while the GPUs (and which of them failed
// discovery) and the health options stay; otherwise the next one takes
// over the previous one's state. A GPU that failed discovery is seeded as
// a fault the monitor must probe, so that its recovery is noticed.
//
// Thread safety: not thread-safe; the loop thread only. The monitor
// reports on its own thread; Stop joins it.
#pragma once

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "src/base/metrics/gpulet_metrics.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/health/health_monitor.h"
#include "src/gpu/nvml/library.h"
#include "src/plugin/daemon/served_resources.h"

namespace gpulet::daemon {

class MonitorKeeper {
 public:
  // `metrics` and `served` outlive this object.
  MonitorKeeper(const metrics::GpuletMetrics* metrics, ServedResources& served);
  ~MonitorKeeper() { Stop(); }
  MonitorKeeper(const MonitorKeeper&) = delete;
  MonitorKeeper& operator=(const MonitorKeeper&) = delete;

  // The monitor `health` asks for over `node`'s GPUs, read from `lib`
  // (which outlives it). A monitor that cannot start is logged: health
  // checks are off.
  void Ensure(nvml::Library& lib, const health::MonitorOptions& health,
              const device::Node& node);
  void Stop();

 private:
  const metrics::GpuletMetrics* const metrics_;
  ServedResources& served_;
  std::unique_ptr<health::HealthMonitor> monitor_;
  // The monitor's GPUs (index, UUID, discovery failed) and options, to
  // tell whether a reload needs a new one.
  std::vector<std::tuple<unsigned, std::string, bool>> gpus_;
  health::MonitorOptions options_;
};

}  // namespace gpulet::daemon
