// Server: a small HTTP/1.1 server, optionally over TLS, for gpulet's
// endpoints that take requests from other programs (the scheduler
// extender's filter, prioritize and bind, its /healthz and /metrics).
//
// What one client can hold is bounded:
// - connection slots: at most `max_connections` connections are served at
//   once, at most `max_connections_per_peer` from one IP address. An idle
//   connection (in its TLS handshake, or between requests) gives way to a
//   new one when the server or the peer is at its limit, oldest first
//   (ConnectionSlots); when none can, further connections wait: in the
//   listen backlog, or, past their peer's limit, accepted and parked
//   (without a thread, at most max_connections of them) until that peer
//   has room;
// - time: the TLS handshake and the wait for a request's first byte have
//   `idle_timeout`; each request then has `request_deadline` until its
//   answer is written. A client that is too slow is disconnected, never
//   waited for;
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
// Mutual TLS: with `client_ca_file` too, clients are asked for a
// certificate signed by one of its CAs; one that does not verify fails the
// handshake. A request for any path but `open_paths` is then answered only
// for a client whose verified certificate has a common name or DNS name
// in `allowed_client_names` (any name when the list is empty); others get
// 403 and the connection is closed before the body is read. With no open
// paths a client without a certificate fails the handshake itself
// (SSL_VERIFY_FAIL_IF_NO_PEER_CERT). A connection whose client proved no
// allowed identity is always evictable, so unauthenticated clients cannot
// keep an authenticated one from a slot.
//
// Start() sets SIGPIPE to be ignored in the whole process: OpenSSL writes
// to sockets without MSG_NOSIGNAL, and a client hanging up mid-answer must
// end its connection, not the process.
//
// Ownership: the server owns its listening socket, one accept thread and
// one thread per open connection (std::jthread, at most max_connections,
// and those giving way for a moment until they notice).
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
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/net/http/request.h"

namespace gpulet::http {

struct ServerOptions {
  // "host:port" as common::ParseListenAddress takes it; port 0 picks one.
  std::string address;
  std::string tls_cert_file{};  // PEM chain; set together with the key
  std::string tls_key_file{};
  // PEM CAs of client certificates (mutual TLS); needs the two above.
  std::string client_ca_file{};
  std::vector<std::string> allowed_client_names{};
  // Paths answered without a client certificate ("/healthz").
  std::vector<std::string> open_paths{};
  absl::Duration request_deadline = absl::Seconds(30);
  absl::Duration idle_timeout = absl::Seconds(5);
  size_t max_head_bytes = 64 << 10;
  size_t max_body_bytes = 4 << 20;
  int max_connections = 64;
  int max_connections_per_peer = 32;
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
  // client CA without them, a certificate, key or CA that cannot be loaded,
  // a key that does not match; Unavailable when the address cannot be
  // bound.
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
