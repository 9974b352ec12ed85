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

ServerOptions MetricsServerOptions(const std::string& address) {
  ServerOptions options;
  options.address = address;
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
