#include "src/dra/runner/dra_health.h"

#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "src/base/common/logging.h"
#include "src/dra/kubelet/node_devices.h"

namespace gpulet::daemon {
namespace {

int64_t NowUnix() { return static_cast<int64_t>(std::time(nullptr)); }

}  // namespace

DraHealth::DraHealth(nvml::Library& lib, const device::Node& node,
                     dra::DeviceHealthBoard& board)
    : lib_(lib), node_(node), board_(board) {}

void DraHealth::MarkAllHealthy() {
  std::vector<dra::DeviceHealth> all;
  for (const std::string& name : dra::NodeDeviceNames(node_)) {
    all.push_back({.device = name,
                   .healthy = true,
                   .message = "",
                   .updated_unix = NowUnix(),
                   .fault = {}});
  }
  board_.Set(all);
}

absl::Status DraHealth::StartMonitor(const health::MonitorOptions& options,
                                     health::CarryOver seed) {
  options_ = options;
  if (node_.gpus.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<health::HealthMonitor>> started =
      health::HealthMonitor::Start(
          lib_, node_.gpus, options,
          [this](const health::HealthEvent& e) {
            board_.Set(dra::HealthOfEvent(
                node_, e.gpu_index, e.gpu_instance_id, e.healthy, e.reason,
                NowUnix(), {.xid = e.xid, .lost = health::IsGpuLoss(e)}));
          },
          std::move(seed));
  if (!started.ok()) return started.status();
  monitor_ = *std::move(started);
  return absl::OkStatus();
}

absl::Status DraHealth::Start(const health::MonitorOptions& options) {
  MarkAllHealthy();
  return StartMonitor(options, {});
}

absl::Status DraHealth::Apply(const health::MonitorOptions& options) {
  if (options == options_) return absl::OkStatus();
  health::CarryOver carried;
  if (monitor_) carried = monitor_->Stop();
  monitor_.reset();
  if (options.disabled) {
    GPULET_LOG(INFO) << "dra: health checks disabled; every device healthy";
    MarkAllHealthy();
    carried = {};
  }
  GPULET_LOG(INFO) << "dra: health options changed; monitor restarted";
  return StartMonitor(options, std::move(carried));
}

void DraHealth::Stop() {
  if (monitor_) monitor_->Stop();
}

}  // namespace gpulet::daemon
