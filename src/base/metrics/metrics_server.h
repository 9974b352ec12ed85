// MetricsServer: serves a Registry over HTTP for Prometheus.
//
//   GET /metrics  the registry in the text exposition format 0.0.4
//                 (Content-Type: text/plain; version=0.0.4; charset=utf-8)
//   GET /healthz  "ok"
//
// The address is "host:port" as common::ParseListenAddress reads it
// (src/base/common/listen.h): "127.0.0.1:9400", ":9400", "[::1]:9400";
// port 0 picks a free port, which port() then reports. An empty address
// means "no server": the daemon does not call Start.
//
// Ownership: the server owns the listening socket and one std::jthread that
// blocks in poll(2) (no wake-ups while idle) and serves up to 16 connections
// at once (HTTP/1.1, Connection: close). Each connection has 5 s from its
// accept to send a request head of at most 8 KiB and receive the answer,
// then it is closed: a slow client holds one slot for 5 s at most and never
// delays the others. It borrows the registry, which must outlive it.
// The destructor wakes the thread through an eventfd and joins it.
// Thread safety: construct and destroy on one thread; port() from any.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/base/metrics/registry.h"

namespace gpulet::metrics {

class MetricsServer {
 public:
  // Binds `address` and starts serving `registry`. Errors name the address:
  // InvalidArgument for a malformed one (common::ParseListenAddress),
  // Unavailable when it cannot be bound (in use, unknown host, no
  // permission).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& address, const Registry& registry);

  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The bound port (the chosen one when the address said 0).
  int port() const { return port_; }
  // The host part as bound ("0.0.0.0" for an empty host).
  const std::string& host() const { return host_; }

  class Impl;
  // Use Start(); public only for std::make_unique (Impl is private to the
  // .cc file).
  MetricsServer(std::unique_ptr<Impl> impl, std::string host, int port);

 private:
  std::unique_ptr<Impl> impl_;
  std::string host_;
  int port_ = 0;
};

}  // namespace gpulet::metrics
