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
// - The client certificate and key are handed to OpenSSL from memory; when
//   they came from files, a pair rotated on disk is used by the next new
//   connection and the idle pool is dropped (tls_context_source.h). The
//   bearer token comes from a TokenSource that re-reads a rotating token
//   file. Neither ever appears in a log line or a Status message.
// - Impersonation (config.impersonation, impersonation.h) goes out as
//   Impersonate-* headers on every request.
// - With an exec credential plugin (config.exec) the token, the client
//   certificate and key, or both, come from the plugin instead
//   (exec_credential_source.h: run at the first request, again on expiry
//   and after a 401). A new certificate gets a new TLS context, and pooled
//   connections made with the old one are dropped.
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
// `connect_timeout` bounds resolving the host, connecting and the TLS
// handshake within it; Request::idle_timeout bounds each wait for bytes of
// the answer (measured from the last bytes that arrived). Every connection
// has TCP keepalive tuned (`keepalive`, tcp_keepalive.h). Stream()'s stop
// request ends a blocked read at once (Cancelled).
//
// Metrics (`metrics`, request_metrics.h), as client-go counts them: every
// call to Do() or Stream() counts once in rest_client_requests_total, when
// the answer's status line and headers have arrived (a watch: as its stream
// starts, not when it ends) with that status, or, when no answer came, as it
// fails with code "<error>". The Client's retries are calls of their own,
// each counted (the transport's one silent resend of a GET on a stale pooled
// connection is not). Each Do() is observed in
// rest_client_request_duration_seconds from its start (connecting
// included) to its whole answer or failure; a Stream() is not (client-go
// times no watch either).
//
// Thread safety: Do() and Stream() may be called from any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/base/common/clock.h"
#include "src/net/kube/exec_credential_source.h"
#include "src/net/kube/exec_plugin.h"
#include "src/net/kube/kubeconfig.h"
#include "src/net/kube/request_metrics.h"
#include "src/net/kube/resolver.h"
#include "src/net/kube/tcp_keepalive.h"
#include "src/net/kube/tls_client_context.h"
#include "src/net/kube/tls_connection.h"
#include "src/net/kube/tls_context_source.h"
#include "src/net/kube/token_source.h"
#include "src/net/kube/transport.h"

namespace gpulet::kube {

struct TlsTransportOptions {
  // Reads the time for every deadline and token-file refresh; must outlive
  // the transport.
  const common::Clock* clock = &common::RealClock::Get();
  Resolver* resolver = nullptr;  // borrowed; nullptr: Resolver::System()
  TcpKeepAlive keepalive{};
  absl::Duration token_refresh = absl::Minutes(1);
  absl::Duration connect_timeout = absl::Seconds(10);
  size_t max_body = 256 << 20;  // a whole (paged) response
  size_t max_head = 64 << 10;
  size_t max_idle = 4;       // pooled connections
  ExecPluginOptions exec{};  // how an exec credential plugin is run
  RequestMetrics metrics{};  // default: none recorded
};

class TlsTransport final : public Transport {
 public:
  // InvalidArgument, naming config.source, when the server is not an
  // https:// URL, the client certificate comes without its key, the CA,
  // certificate or key is not valid PEM (or the key does not match), or an
  // impersonation value cannot go into a header.
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
  // Rotated client certificate pairs loaded so far (for tests).
  int certificate_reloads() const { return contexts_->reloads(); }

 private:
  struct Target {
    std::string host;  // without brackets
    std::string port;
    std::string authority;  // the Host header
    std::string base_path;  // the URL's path, "" or "/prefix"
  };
  struct Attempt;
  struct Identity;
  static absl::StatusOr<Target> ParseServer(
      const config::ApiServerConfig& config);
  // The request as sent: head (with the token) and body.
  std::string Message(const Request& request, const std::string& token) const;
  TlsTransport(const config::ApiServerConfig& config,
               const TlsTransportOptions& options,
               std::unique_ptr<TlsContextSource> contexts, Target target);
  // The context of the configured client certificate (none with an exec
  // plugin); drops the idle pool when the certificate files were rotated.
  std::shared_ptr<SSL_CTX> Context();
  // The token and TLS context for the next request.
  absl::StatusOr<Identity> CurrentIdentity();
  // Send, counted and timed (options_.metrics).
  absl::StatusOr<Response> Perform(const Request& request,
                                   const ChunkFn* on_chunk,
                                   const std::stop_token& stop);
  // `counted`: whether the answer's head was counted on its arrival.
  absl::StatusOr<Response> Send(const Request& request, const ChunkFn* on_chunk,
                                const std::stop_token& stop, bool& counted);
  absl::StatusOr<Response> Exchange(TlsConnection& conn, bool reused,
                                    const std::string& message,
                                    const Request& request,
                                    const ChunkFn* on_chunk,
                                    absl::Time deadline, Attempt& attempt);
  TlsConnectionPtr TakeIdle();
  // Pools `conn` unless the client identity changed since `ctx` made it.
  void ReturnIdle(TlsConnectionPtr conn, const SSL_CTX* ctx);

  const std::string server_;
  const std::string source_;
  const TlsTransportOptions options_;
  const std::unique_ptr<TlsContextSource> contexts_;
  const std::string ca_pem_;
  const Target target_;
  const std::string impersonation_headers_;
  TokenSource tokens_;
  const std::unique_ptr<ExecCredentialSource> exec_;  // null without exec
  mutable absl::Mutex mu_;
  std::vector<TlsConnectionPtr> idle_ ABSL_GUARDED_BY(mu_);
  int opened_ ABSL_GUARDED_BY(mu_) = 0;
  // The context with the exec plugin's certificate, and its generation.
  std::shared_ptr<SSL_CTX> exec_ctx_ ABSL_GUARDED_BY(mu_);
  uint64_t exec_ctx_generation_ ABSL_GUARDED_BY(mu_) = 0;
  // The context new requests use: only connections made with it are pooled.
  std::shared_ptr<SSL_CTX> current_ctx_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpulet::kube
