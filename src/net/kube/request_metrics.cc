#include "src/net/kube/request_metrics.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/common/status_macros.h"

namespace gpulet::kube {
namespace {

// client-go's latency buckets, 5 ms to 60 s.
const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> buckets = {
      0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};
  return buckets;
}

}  // namespace

absl::StatusOr<RequestMetrics> RequestMetrics::Register(
    metrics::Registry& registry) {
  RequestMetrics m;
  GPULET_ASSIGN_OR_RETURN(
      m.requests_,
      registry.AddCounter("rest_client_requests_total",
                          "Number of HTTP requests, partitioned by status "
                          "code, method, and host.",
                          {"code", "method", "host"}));
  GPULET_ASSIGN_OR_RETURN(
      m.latency_,
      registry.AddHistogram(
          "rest_client_request_duration_seconds",
          "Request latency in seconds. Broken down by verb, and host.",
          {"verb", "host"}, LatencyBuckets()));
  return m;
}

void RequestMetrics::CountResult(absl::string_view code,
                                 absl::string_view method,
                                 absl::string_view host) const {
  if (requests_ == nullptr) return;
  requests_->Add({std::string(code), std::string(method), std::string(host)});
}

void RequestMetrics::CountResult(int status, absl::string_view method,
                                 absl::string_view host) const {
  CountResult(absl::StrCat(status), method, host);
}

void RequestMetrics::ObserveLatency(absl::string_view verb,
                                    absl::string_view host,
                                    absl::Duration latency) const {
  if (latency_ == nullptr) return;
  latency_->Observe({std::string(verb), std::string(host)},
                    absl::ToDoubleSeconds(latency));
}

}  // namespace gpulet::kube
