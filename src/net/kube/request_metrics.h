// RequestMetrics: the API client's request metrics, named, labelled and
// bucketed as client-go's (k8s.io/client-go/tools/metrics, registered by
// k8s.io/component-base/metrics/prometheus/restclient), so dashboards and
// alerts written for Kubernetes components work on gpulet's /metrics:
//
//   rest_client_requests_total{code,method,host}      counter
//   rest_client_request_duration_seconds{verb,host}   histogram
//
// `code` is the HTTP status as a decimal string, or "<error>" when no
// response came (refused, TLS failure, timeout, cancelled); `method` and
// `verb` are the request's method ("GET", "PATCH"); `host` is the server
// URL's host as written, with its port when it has one ("10.96.0.1:443").
// The TLS transport (tls_transport.h) records them: when and what it counts
// is said there.
//
// A RequestMetrics holds borrowed pointers into a Registry; copy it freely,
// the registry must outlive every copy. A default-constructed one records
// nothing. Thread safety: the families are thread-safe (registry.h).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/base/metrics/registry.h"

namespace gpulet::kube {

// The label value of `code` for an exchange that got no HTTP response.
inline constexpr char kNoResponseCode[] = "<error>";

class RequestMetrics {
 public:
  RequestMetrics() = default;

  // Registers both families (idempotent on the same registry).
  static absl::StatusOr<RequestMetrics> Register(metrics::Registry& registry);

  // One request's outcome: an HTTP status, or kNoResponseCode.
  void CountResult(absl::string_view code, absl::string_view method,
                   absl::string_view host) const;
  void CountResult(int status, absl::string_view method,
                   absl::string_view host) const;
  // One request's time from sending to its whole answer (or failure).
  void ObserveLatency(absl::string_view verb, absl::string_view host,
                      absl::Duration latency) const;

 private:
  metrics::Family* requests_ = nullptr;
  metrics::Family* latency_ = nullptr;
};

}  // namespace gpulet::kube
