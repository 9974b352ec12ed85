// TlsContextSource: the OpenSSL client context (tls_client_context.h) each
// new connection of TlsTransport is made with. When the client certificate
// and key came from files (kubeconfig client-certificate / client-key, not
// -data), every Get() looks at both files (device, inode, size, modification
// time, following symlinks) and, when either changed, reads both again and
// builds a new context from the pair. A certificate rotated on disk (the
// kubelet's rotation swaps the kubelet-client-current.pem symlink;
// cert-manager rewrites the files) is so used by the next connection,
// without a restart, as client-go's certificate rotation does.
//
// Both files are read as one pair: when the new pair does not load (a key
// that does not belong to the certificate because only one of the two files
// was replaced yet, a half-written file) the previous context stays in use,
// and the problem is logged once until the files change again. Unchanged
// content (a file touched, rewritten the same) keeps the context as it is.
//
// Thread safety: Get() may be called from any thread. A context handed out
// stays valid for as long as its holder keeps it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "src/net/kube/kubeconfig.h"
#include "src/net/kube/tls_client_context.h"

namespace gpulet::kube {

class TlsContextSource {
 public:
  // Builds the first context from `config`'s PEM; errors as
  // NewClientContext's.
  static absl::StatusOr<std::unique_ptr<TlsContextSource>> Create(
      const config::ApiServerConfig& config);

  struct Current {
    std::shared_ptr<SSL_CTX> ctx;
    bool changed = false;  // a new certificate pair was loaded by this call
  };
  // The context for a new connection.
  Current Get();

  // Certificate pairs loaded after the first (for tests).
  int reloads() const;

 private:
  // What identifies a file's version without reading it.
  struct Stamp {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = -1;
    int64_t mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  struct Stamps {
    Stamp cert, key;
    bool operator==(const Stamps&) const = default;
  };

  TlsContextSource(const config::ApiServerConfig& config, SslCtxPtr ctx);
  Stamps Look() const;
  // Reads and loads the pair at `now`. REQUIRES: mu_ held.
  void Reload(const Stamps& now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const config::ApiServerConfig config_;  // as first loaded
  const bool watch_files_;
  mutable absl::Mutex mu_;
  std::string cert_pem_ ABSL_GUARDED_BY(mu_);  // behind ctx_
  std::string key_pem_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<SSL_CTX> ctx_ ABSL_GUARDED_BY(mu_);
  Stamps loaded_ ABSL_GUARDED_BY(mu_);  // the files behind ctx_
  Stamps failed_ ABSL_GUARDED_BY(mu_);  // a pair that did not load
  int reloads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gpulet::kube
