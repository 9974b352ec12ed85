#include "src/plugin/daemon/process_metrics.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/listen.h"
#include "src/base/common/logging.h"
#include "src/net/http/metrics_handler.h"

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
  absl::StatusOr<std::unique_ptr<http::Server>> server = http::Server::Start(
      http::MetricsServerOptions(address), http::MetricsHandler(registry_));
  if (!server.ok()) {
    return common::Annotate(server.status(), "cannot serve metrics");
  }
  server_ = *std::move(server);
  // Start() parsed the address already.
  const common::ListenAddress bound = {
      common::ParseListenAddress(address)->host, server_->port()};
  GPULET_LOG(INFO) << "serving /metrics on "
                   << (bound.host.empty() ? absl::StrCat("[::]:", bound.port)
                                          : common::FormatListenAddress(bound));
  return absl::OkStatus();
}

}  // namespace gpulet::daemon
