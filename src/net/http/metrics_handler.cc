#include "src/net/http/metrics_handler.h"

namespace gpulet::http {

Response MetricsResponse(const metrics::Registry& registry) {
  return Response{.status = 200,
                  .content_type = kMetricsContentType,
                  .body = registry.Render()};
}

Handler MetricsHandler(const metrics::Registry& registry) {
  return [&registry](const Request& request) {
    if (request.path != "/metrics" && request.path != "/healthz") {
      return TextResponse(404, "not found");
    }
    if (request.method != "GET") return TextResponse(405, "only GET");
    if (request.path == "/healthz") return TextResponse(200, "ok");
    return MetricsResponse(registry);
  };
}

absl::Status ValidateMetricsTls(const MetricsTls& tls) {
  if (!tls.cert_file.empty() && tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--metrics-tls-cert-file needs --metrics-tls-key-file: give the "
        "certificate's key too");
  }
  if (tls.cert_file.empty() && !tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--metrics-tls-key-file needs --metrics-tls-cert-file: give the "
        "key's certificate too");
  }
  if (!tls.client_ca_file.empty() && tls.cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--metrics-client-ca-file needs --metrics-tls-cert-file and "
        "--metrics-tls-key-file: client certificates are checked over TLS "
        "only");
  }
  return absl::OkStatus();
}

ServerOptions MetricsServerOptions(const std::string& address,
                                   const MetricsTls& tls) {
  ServerOptions options;
  options.address = address;
  options.tls_cert_file = tls.cert_file;
  options.tls_key_file = tls.key_file;
  options.client_ca_file = tls.client_ca_file;
  // Probes send no client certificate.
  if (!tls.client_ca_file.empty()) options.open_paths = {"/healthz"};
  options.request_deadline = absl::Seconds(5);
  options.idle_timeout = absl::Seconds(5);
  options.max_head_bytes = 8 << 10;
  options.max_body_bytes = 0;
  options.max_connections = 16;
  options.max_connections_per_peer = 16;
  options.name = "metrics";
  return options;
}

}  // namespace gpulet::http
