#include "src/plugin/daemon/process_metrics.h"

#include <utility>

#include "src/base/common/errors.h"
#include "src/base/common/logging.h"

namespace gpulet::daemon {

absl::Status ProcessMetrics::Start(const std::string& address) {
  absl::StatusOr<metrics::GpuletMetrics> m =
      metrics::GpuletMetrics::Register(registry_);
  if (!m.ok()) return m.status();
  gpulet_ = *m;
  // Counters without labels exist from the start, at 0.
  gpulet_.kubelet_restarts->Add({}, 0);
  gpulet_.config_reloads->Add({metrics::kResultOk}, 0);
  gpulet_.config_reloads->Add({metrics::kResultError}, 0);
  if (address.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<metrics::MetricsServer>> server =
      metrics::MetricsServer::Start(address, registry_);
  if (!server.ok()) {
    return common::Annotate(server.status(), "cannot serve metrics");
  }
  server_ = *std::move(server);
  GPULET_LOG(INFO) << "serving /metrics on " << server_->host() << ":"
                   << server_->port();
  return absl::OkStatus();
}

}  // namespace gpulet::daemon
