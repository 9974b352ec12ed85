// DraHealth: `gpulet dra`'s health monitor (health::HealthMonitor) over the
// node's GPUs, its decisions put on the DeviceHealthBoard by DRA device
// name, each unhealthy device with its fault (the Xid, whether the GPU is
// lost: what a taint says, slice_builder.h).
//
// Start() marks every device healthy, then starts a monitor with the
// options given. Apply() takes new options (a configuration reload): the
// same options keep the monitor; others start the next monitor with the
// previous one's state (health::CarryOver: unhealthy GPUs stay so and keep
// their recovery progress); disabled health checks mark every device
// healthy again, as at a start without checks.
//
// Ownership: borrows the library, the node and the board, which outlive
// this object. Thread safety: Start, Apply and Stop from one thread; the
// monitor reports on its own thread (the board is thread-safe).
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "src/dra/kubelet/device_health.h"
#include "src/gpu/device/gpu.h"
#include "src/gpu/health/health_monitor.h"
#include "src/gpu/nvml/library.h"

namespace gpulet::daemon {

class DraHealth {
 public:
  DraHealth(nvml::Library& lib, const device::Node& node,
            dra::DeviceHealthBoard& board);
  ~DraHealth() { Stop(); }
  DraHealth(const DraHealth&) = delete;
  DraHealth& operator=(const DraHealth&) = delete;

  // Errors: the monitor could not start (health::HealthMonitor::Start).
  absl::Status Start(const health::MonitorOptions& options);
  absl::Status Apply(const health::MonitorOptions& options);
  void Stop();

 private:
  absl::Status StartMonitor(const health::MonitorOptions& options,
                            health::CarryOver seed);
  void MarkAllHealthy();

  nvml::Library& lib_;
  const device::Node& node_;
  dra::DeviceHealthBoard& board_;
  health::MonitorOptions options_;
  std::unique_ptr<health::HealthMonitor> monitor_;
};

}  // namespace gpulet::daemon
