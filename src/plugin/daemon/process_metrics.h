// ProcessMetrics: the device plugin process's metrics, across reloads: the
// registry every part registers into, gpulet's own families
// (metrics::GpuletMetrics) and the /metrics server (an http::Server with
// http::MetricsHandler), when metrics.address is set (it keeps its address
// until the process restarts).
//
// Thread safety: Start on the loop thread before anything reads the
// families; afterwards the registry and the families are thread-safe and
// the pointers they are reached through stay valid for the object's life.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "src/base/metrics/gpulet_metrics.h"
#include "src/base/metrics/registry.h"
#include "src/net/http/server.h"

namespace gpulet::daemon {

class ProcessMetrics {
 public:
  ProcessMetrics() = default;
  ProcessMetrics(const ProcessMetrics&) = delete;
  ProcessMetrics& operator=(const ProcessMetrics&) = delete;

  // Registers the families (the counters without labels at 0) and serves
  // them on `address` when it is not empty.
  absl::Status Start(const std::string& address);
  metrics::Registry& registry() { return registry_; }
  // Null families until Start.
  const metrics::GpuletMetrics* gpulet() const { return &gpulet_; }

 private:
  metrics::Registry registry_;
  metrics::GpuletMetrics gpulet_;
  std::unique_ptr<http::Server> server_;
};

}  // namespace gpulet::daemon
