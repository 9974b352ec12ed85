// TlsTransport: the Transport to a real API server, HTTP/1.1 over TLS on
// OpenSSL (tls_connection.h), responses read by HttpResponseParser.
//
// Security rules, enforced here for every request:
// - The server's certificate is always verified (chain and host name or IP
//   address), against the configured CA only when one is given (kubeconfig
//   certificate-authority[-data], in-cluster ca.crt), else against the
//   system's trust store. TLS 1.2 or newer. There is no switch to turn
//   verification off.
// - Only https:// is spoken; redirects are not followed (a 3xx is a
//   Response like any other, so a credential never goes to another host);
//   proxies are not used.
// - The client certificate and key are handed to OpenSSL from memory; the
//   bearer token comes from a TokenSource that re-reads a rotating token
//   file. Neither ever appears in a log line or a Status message.
//
// Connections: Do() takes an idle connection from a small pool (or opens
// one) and puts it back when the response ended cleanly with keep-alive,
// so requests from several threads share a few connections. An idle
// connection the server has closed is noticed before it is used. When a
// reused connection fails before any byte of the answer came back, the
// request is sent once more on a new connection if it is a GET, or if
// nothing of it had been sent. Stream() opens a connection of its own.
//
// Bounds: a whole response body at most `max_body` bytes (a non-2xx body
// while streaming, 1 MiB), the status line and headers `max_head` bytes:
// past them ResourceExhausted. Request::timeout covers the whole exchange;
// `connect_timeout` bounds connecting and the TLS handshake within it.
// Stream()'s stop request ends a blocked read at once (Cancelled).
//
// Thread safety: Do() and Stream() may be called from any number of threads.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/base/common/clock.h"
#include "src/net/kube/kubeconfig.h"
#include "src/net/kube/tls_client_context.h"
#include "src/net/kube/tls_connection.h"
#include "src/net/kube/token_source.h"
#include "src/net/kube/transport.h"

namespace gpulet::kube {

struct TlsTransportOptions {
  // Drives token-file refresh; must outlive the transport.
  const common::Clock* clock = &common::RealClock::Get();
  absl::Duration token_refresh = absl::Minutes(1);
  absl::Duration connect_timeout = absl::Seconds(10);
  size_t max_body = 256 << 20;  // a whole (paged) response
  size_t max_head = 64 << 10;
  size_t max_idle = 4;  // pooled connections
};

class TlsTransport final : public Transport {
 public:
  // InvalidArgument, naming config.source, when the server is not an
  // https:// URL, the client certificate comes without its key, or the CA,
  // certificate or key is not valid PEM (or the key does not match).
  static absl::StatusOr<std::unique_ptr<TlsTransport>> Create(
      const config::ApiServerConfig& config,
      const TlsTransportOptions& options = {});
  ~TlsTransport() override;

  absl::StatusOr<Response> Do(const Request& request,
                              std::stop_token stop = {}) override;
  absl::StatusOr<Response> Stream(const Request& request,
                                  const ChunkFn& on_chunk,
                                  std::stop_token stop) override;

  // Connections opened so far (for tests of connection reuse).
  int connections_opened() const;

 private:
  struct Target {
    std::string host;  // without brackets
    std::string port;
    std::string authority;  // the Host header
    std::string base_path;  // the URL's path, "" or "/prefix"
  };
  struct Attempt;
  static absl::StatusOr<Target> ParseServer(
      const config::ApiServerConfig& config);
  // The request as sent: head (with the token) and body.
  std::string Message(const Request& request, const std::string& token) const;
  TlsTransport(const config::ApiServerConfig& config,
               const TlsTransportOptions& options, SslCtxPtr ctx,
               Target target);
  absl::StatusOr<Response> Perform(const Request& request,
                                   const ChunkFn* on_chunk,
                                   const std::stop_token& stop);
  absl::StatusOr<Response> Exchange(TlsConnection& conn, bool reused,
                                    const std::string& message,
                                    const Request& request,
                                    const ChunkFn* on_chunk,
                                    absl::Time deadline, Attempt& attempt);
  TlsConnectionPtr TakeIdle();
  void ReturnIdle(TlsConnectionPtr conn);

  const std::string server_;
  const std::string source_;
  const TlsTransportOptions options_;
  const SslCtxPtr ctx_;
  const Target target_;
  TokenSource tokens_;
  mutable absl::Mutex mu_;
  std::vector<TlsConnectionPtr> idle_ ABSL_GUARDED_BY(mu_);
  int opened_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gpulet::kube
