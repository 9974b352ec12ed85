// The Prometheus endpoint on the one HTTP server (server.h): every gpulet
// process that serves /metrics serves it through a Server, alone on its own
// address (`gpulet plugin --metrics-address`) or beside other paths on a
// shared one (the scheduler extender's verbs).
//
//   GET /metrics  the registry in the text exposition format 0.0.4
//                 (Content-Type: text/plain; version=0.0.4; charset=utf-8)
//   GET /healthz  "ok"
//
// Another method on those paths is 405, another path 404.
//
// Thread safety: the handler only reads the registry (thread-safe,
// src/base/metrics/registry.h), which it borrows: the registry must outlive
// the server.
#pragma once

#include <string>

#include "src/base/metrics/registry.h"
#include "src/net/http/request.h"
#include "src/net/http/server.h"

namespace gpulet::http {

inline constexpr char kMetricsContentType[] =
    "text/plain; version=0.0.4; charset=utf-8";

// 200 with the registry rendered, for a handler that serves /metrics among
// other paths.
Response MetricsResponse(const metrics::Registry& registry);

// Answers /metrics and /healthz as above.
Handler MetricsHandler(const metrics::Registry& registry);

// Options of a server that serves only MetricsHandler on `address`, bounded
// for scrapers: 16 connections (all may be from one Prometheus), 5 s to
// send a request of at most 8 KiB head and no body and read the answer, 5 s
// idle between requests. Name "metrics" in log lines and errors. TLS
// fields are left for the caller.
ServerOptions MetricsServerOptions(const std::string& address);

}  // namespace gpulet::http
