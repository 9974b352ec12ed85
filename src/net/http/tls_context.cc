#include "src/net/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"

namespace gpulet::http {
namespace {

// The oldest queued OpenSSL error as text, and the queue cleared.
std::string OpenSslError() {
  const unsigned long code = ERR_get_error();  // NOLINT(runtime/int)
  ERR_clear_error();
  if (code == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof(buf));
  return buf;
}

std::string FileStamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return absl::StrCat(st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, "/",
                      st.st_size);
}

std::string Stamp(const TlsFiles& files) {
  std::string stamp =
      FileStamp(files.cert_file) + " " + FileStamp(files.key_file);
  if (!files.client_ca_file.empty()) {
    stamp += " " + FileStamp(files.client_ca_file);
  }
  return stamp;
}

// Asks clients for a certificate signed by a CA of `ca_file`.
absl::Status VerifyClients(SSL_CTX* ctx, const std::string& ca_file,
                           bool require) {
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--client-ca-file ", ca_file,
                     ": cannot load PEM CA certificates: ", OpenSslError()));
  }
  // The CA names sent in the CertificateRequest: a client with several
  // certificates picks the one these signed.
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca_file.c_str());
  if (names == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--client-ca-file ", ca_file,
                     ": no CA certificate in it: ", OpenSslError()));
  }
  SSL_CTX_set_client_CA_list(ctx, names);
  SSL_CTX_set_verify(
      ctx, SSL_VERIFY_PEER | (require ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
      nullptr);
  // No resumption: a resumed session would skip the check against the
  // current CA file.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(ctx, 0);
  static const unsigned char kContext[] = "gpulet-http";
  SSL_CTX_set_session_id_context(ctx, kContext, sizeof(kContext) - 1);
  return absl::OkStatus();
}

absl::StatusOr<SslCtxPtr> MakeContext(const TlsFiles& files) {
  const std::string& cert_file = files.cert_file;
  const std::string& key_file = files.key_file;
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (ctx == nullptr) {
    return absl::InternalError(absl::StrCat("TLS: ", OpenSslError()));
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-cert-file ", cert_file,
        ": cannot load a PEM certificate chain: ", OpenSslError()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), key_file.c_str(),
                                  SSL_FILETYPE_PEM) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key-file ", key_file,
                     ": cannot load a PEM private key: ", OpenSslError()));
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-key-file ", key_file,
        ": the key does not match the certificate in ", cert_file));
  }
  if (!files.client_ca_file.empty()) {
    absl::Status s = VerifyClients(ctx.get(), files.client_ca_file,
                                   files.require_client_cert);
    if (!s.ok()) return s;
  }
  return ctx;
}

}  // namespace

void SslCtxFree::operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }

absl::StatusOr<std::unique_ptr<TlsContext>> TlsContext::Load(TlsFiles files) {
  std::string stamp = Stamp(files);
  absl::StatusOr<SslCtxPtr> ctx = MakeContext(files);
  if (!ctx.ok()) return ctx.status();
  return std::make_unique<TlsContext>(std::move(files), *std::move(ctx),
                                      std::move(stamp));
}

TlsContext::TlsContext(TlsFiles files, SslCtxPtr ctx, std::string stamp)
    : files_(std::move(files)),
      ctx_(std::move(ctx)),
      stamp_(std::move(stamp)) {}

SslCtxPtr TlsContext::Get() {
  const std::string stamp = Stamp(files_);
  absl::MutexLock lock(&mu_);
  if (stamp != stamp_) {
    stamp_ = stamp;
    absl::StatusOr<SslCtxPtr> fresh = MakeContext(files_);
    if (fresh.ok()) {
      ctx_ = *std::move(fresh);
      GPULET_LOG(INFO) << "TLS certificate reloaded from " << files_.cert_file;
    } else {
      GPULET_LOG(WARNING) << "TLS certificate not reloaded, serving the "
                             "previous one: "
                          << fresh.status().message();
    }
  }
  SSL_CTX_up_ref(ctx_.get());
  return SslCtxPtr(ctx_.get());
}

}  // namespace gpulet::http
