// The OpenSSL client context TlsTransport's connections share, built from
// an ApiServerConfig: TLS 1.2 or newer, peer verification on, the
// configured CA as the only trust anchor (the system's trust store when
// none is given), the client certificate chain and key when given, ALPN
// http/1.1. Renegotiation is refused; a server that closes without a TLS
// close_notify ends the stream like a TCP close (the HTTP framing says
// whether the response was whole).
//
// Thread safety: the context is read-only once built and shared by
// connections on any thread.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "src/net/kube/kubeconfig.h"

typedef struct ssl_ctx_st SSL_CTX;  // NOLINT: OpenSSL's own spelling

namespace gpulet::kube {

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const;
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

// InvalidArgument naming config.source and the field when the CA, the
// client certificate or the key is not valid PEM, or the key does not
// belong to the certificate.
absl::StatusOr<SslCtxPtr> NewClientContext(
    const config::ApiServerConfig& config);

}  // namespace gpulet::kube
