// Server: a small HTTP/1.1 server, optionally over TLS, for gpulet's
// endpoints that take requests from other programs (the scheduler
// extender's filter, prioritize and bind, its /healthz and /metrics).
//
// What one client can hold is bounded:
// - a connection slot: at most `max_connections` connections are served at
//   once; further ones wait in the listen backlog until a slot frees;
// - time: each request has `request_deadline` from its first byte (for the
//   first request on a connection: from the accept, TLS handshake
//   included) until its answer is written; an idle keep-alive connection
//   is closed after `idle_timeout`. A client that is too slow is
//   disconnected, never waited for;
// - memory: a request head of at most `max_head_bytes` (else 431) and a
//   body of at most `max_body_bytes`, announced by Content-Length (else
//   413 before any of the body is read; a Transfer-Encoding gets 411).
//
// TLS: with `tls_cert_file` and `tls_key_file` set, every connection is
// TLS (1.2 or newer); the certificate chain and key are read at Start()
// and again when either file changes (a rotated certificate is served to
// new connections without a restart). Neither the key nor request bodies
// are ever logged.
//
// Start() sets SIGPIPE to be ignored in the whole process: OpenSSL writes
// to sockets without MSG_NOSIGNAL, and a client hanging up mid-answer must
// end its connection, not the process.
//
// Ownership: the server owns its listening socket, one accept thread and
// one thread per open connection (std::jthread, at most max_connections).
// The destructor wakes them all through an eventfd and joins them; a
// handler still running is waited for.
//
// Thread safety: the handler is called from many connection threads at
// once and must be thread-safe. Construct and destroy on one thread;
// port() from any.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/http/request.h"

namespace gpulet::http {

struct ServerOptions {
  // "host:port" as metrics::ParseListenAddress takes it; port 0 picks one.
  std::string address;
  std::string tls_cert_file{};  // PEM chain; set together with the key
  std::string tls_key_file{};
  absl::Duration request_deadline = absl::Seconds(30);
  absl::Duration idle_timeout = absl::Seconds(90);
  size_t max_head_bytes = 64 << 10;
  size_t max_body_bytes = 4 << 20;
  int max_connections = 64;
  // Names the server in log lines and errors ("extender").
  std::string name = "http";
};

// Answers one request. Runs on a connection thread; an exception escaping
// it becomes a 500 (and is logged without the request's body).
using Handler = std::function<Response(const Request&)>;

class Server {
 public:
  // Binds and starts serving. Errors name the option: InvalidArgument for a
  // malformed address, a certificate without its key (or the reverse), a
  // certificate or key that cannot be loaded or do not match; Unavailable
  // when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(
      const ServerOptions& options, Handler handler);

  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const { return port_; }
  bool tls() const { return tls_; }

  class Impl;
  // Use Start(); public only for std::make_unique.
  Server(std::unique_ptr<Impl> impl, int port, bool tls);

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  bool tls_ = false;
};

}  // namespace gpulet::http
