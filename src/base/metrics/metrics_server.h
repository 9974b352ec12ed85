// MetricsServer: serves a Registry over HTTP for Prometheus.
//
//   GET /metrics  the registry in the text exposition format 0.0.4
//                 (Content-Type: text/plain; version=0.0.4; charset=utf-8)
//   GET /healthz  "ok"
//
// The address is "host:port": "127.0.0.1:9400", ":9400" (every IPv4
// interface), "[::1]:9400", "localhost:9400"; port 0 picks a free port,
// which port() then reports. An empty address means "no server": the daemon
// does not call Start.
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
#include "absl/strings/string_view.h"
#include "src/base/metrics/registry.h"

namespace gpulet::metrics {

struct ListenAddress {
  std::string host;  // as given, brackets of an IPv6 literal removed; "" = any
  int port = 0;

  bool operator==(const ListenAddress&) const = default;
};

// Splits "host:port". Errors (InvalidArgument, naming the value): no colon,
// a port that is not a decimal number in [0, 65535], an unclosed "[".
absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view address);

// A non-blocking, close-on-exec listening TCP socket on host:port (port 0:
// any free one) with the given backlog; -1 on failure. For every HTTP
// endpoint gpulet serves (this one and src/net/http's).
int ListenTcp(const std::string& host, int port, int backlog);

// The port a listening socket is bound to; -1 on failure.
int BoundPort(int fd);

class MetricsServer {
 public:
  // Binds `address` and starts serving `registry`. Errors name the address:
  // InvalidArgument for a malformed one (ParseListenAddress), Unavailable
  // when it cannot be bound (in use, unknown host, no permission).
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
