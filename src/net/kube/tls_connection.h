// TlsConnection: one TLS client connection (OpenSSL over a non-blocking TCP
// socket) to the API server, for TlsTransport.
//
// Connect() resolves the host (through a Resolver, so the lookup too ends
// at the deadline), connects to each address in turn within the deadline,
// tunes TCP keepalive (tcp_keepalive.h) and completes the TLS handshake,
// verifying the server's certificate with the SSL_CTX's trust store and
// checking it names the host (a DNS name, sent as SNI too) or the IP address of
// the URL. Errors name the host and the step: "connect to h:p", "TLS handshake
// with h:p"; a certificate that does not verify is FailedPrecondition with
// OpenSSL's verify error.
//
// Every wait polls the socket together with an eventfd, so Interrupt(),
// from any thread, ends a blocked Connect, Read or Write at once
// (Cancelled), and every later one too. A deadline that passes is
// DeadlineExceeded (deadlines are instants of the options' clock); other
// I/O failures are Unavailable. Writes never raise SIGPIPE.
//
// Thread safety: one thread uses the connection at a time; Interrupt() may
// come from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/base/common/clock.h"
#include "src/net/kube/resolver.h"
#include "src/net/kube/tcp_keepalive.h"

typedef struct ssl_st SSL;          // NOLINT: OpenSSL's own spelling
typedef struct ssl_ctx_st SSL_CTX;  // NOLINT

namespace gpulet::kube {

struct TlsConnectionOptions {
  // Reads the time for every deadline; borrowed.
  const common::Clock* clock = &common::RealClock::Get();
  Resolver* resolver = nullptr;  // borrowed; nullptr: Resolver::System()
  TcpKeepAlive keepalive{};
};

class TlsConnection {
 public:
  explicit TlsConnection(const TlsConnectionOptions& options = {});
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  // `host` is a DNS name or an IP address (IPv6 without brackets).
  // REQUIRES: called once, before anything else but Interrupt().
  absl::Status Connect(SSL_CTX* ctx, const std::string& host,
                       const std::string& port, absl::Time deadline);

  // Writes all of `data`.
  absl::Status Write(absl::string_view data, absl::Time deadline);

  // Reads what is there (at least one byte, at most `size`); 0 when the
  // server has closed the connection.
  absl::StatusOr<size_t> Read(char* buffer, size_t size, absl::Time deadline);

  // For an idle connection: false when the server closed it (or sent
  // anything) since the last response, so it cannot carry a request.
  bool Usable();

  // Bytes of this connection's writes the kernel took so far.
  uint64_t bytes_sent() const { return io_.sent; }

  void Interrupt();

  // The socket (-1 before Connect): for tests of its options.
  int fd() const { return io_.fd; }

  // What the socket BIO reaches (public for the BIO's callbacks).
  struct Io {
    int fd = -1;
    uint64_t sent = 0;
  };

 private:
  absl::Status Wait(bool write, absl::Time deadline);
  absl::Status ConnectTcp(const std::string& host, const std::string& port,
                          absl::Time deadline);
  absl::Status Handshake(absl::Time deadline);
  absl::Status SslFailure(int ret, absl::string_view step, bool* retry_write,
                          bool* retry_read);

  const common::Clock& clock_;
  Resolver& resolver_;
  const TcpKeepAlive keepalive_;
  Io io_;
  int wake_fd_ = -1;
  SSL* ssl_ = nullptr;
  bool failed_ = false;  // a fatal TLS error: no close_notify at the end
  std::string name_;     // "host:port", for errors
};

using TlsConnectionPtr = std::unique_ptr<TlsConnection>;

}  // namespace gpulet::kube
