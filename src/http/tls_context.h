// TlsContext: the server side of TLS for Server: an OpenSSL SSL_CTX made
// from a PEM certificate chain file and a PEM private key file, made again
// when either file changes (a certificate rotated by cert-manager or a
// Secret update is served to new connections without a restart). The key
// never leaves OpenSSL and is never logged.
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

class TlsContext {
 public:
  // Loads the files. InvalidArgument naming the flag and file when either
  // cannot be read or parsed, or the key does not match the certificate.
  static absl::StatusOr<std::unique_ptr<TlsContext>> Load(
      std::string cert_file, std::string key_file);

  // A reference to the current context, reloaded first when a file's
  // modification time or size changed. When a reload fails the previous
  // context is kept (and the failure logged once per change).
  SslCtxPtr Get();

  TlsContext(std::string cert_file, std::string key_file, SslCtxPtr ctx,
             std::string stamp);

 private:
  const std::string cert_file_;
  const std::string key_file_;
  absl::Mutex mu_;
  SslCtxPtr ctx_ ABSL_GUARDED_BY(mu_);
  std::string stamp_ ABSL_GUARDED_BY(mu_);  // both files' mtime and size
};

}  // namespace gpulet::http
