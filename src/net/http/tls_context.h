// TlsContext: the server side of TLS for Server: an OpenSSL SSL_CTX made
// from a PEM certificate chain file and a PEM private key file and, for
// mutual TLS, a PEM file of the CAs that sign client certificates; made
// again when any of the files changes (a certificate rotated by
// cert-manager or a Secret update is served to new connections without a
// restart, and a replaced client CA applies to new connections). The key
// never leaves OpenSSL and is never logged.
//
// With a client CA the server asks every client for a certificate
// (SSL_VERIFY_PEER): one that does not chain to the CA, or is not for
// client authentication, fails the handshake. With `require_client_cert`
// a client without one fails it too (SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
// without it such a client is let through and Server refuses it every
// path but the open ones. Sessions are not resumed when clients are
// verified, so every connection is checked against the current CA.
//
// Thread safety: Get() may be called from any thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace gpulet::http {

// Owns one reference to an SSL_CTX.
struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const;
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

struct TlsFiles {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file{};  // empty: clients are not asked
  bool require_client_cert = false;
};

class TlsContext {
 public:
  // Loads the files. InvalidArgument naming the flag and file when one
  // cannot be read or parsed, or the key does not match the certificate.
  static absl::StatusOr<std::unique_ptr<TlsContext>> Load(TlsFiles files);

  // A reference to the current context, reloaded first when a file's
  // modification time or size changed. When a reload fails the previous
  // context is kept (and the failure logged once per change).
  SslCtxPtr Get();

  TlsContext(TlsFiles files, SslCtxPtr ctx, std::string stamp);

 private:
  const TlsFiles files_;
  absl::Mutex mu_;
  SslCtxPtr ctx_ ABSL_GUARDED_BY(mu_);
  std::string stamp_ ABSL_GUARDED_BY(mu_);  // the files' mtime and size
};

}  // namespace gpulet::http
