#include "src/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "src/common/logging.h"

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

absl::StatusOr<SslCtxPtr> MakeContext(const std::string& cert_file,
                                      const std::string& key_file) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (ctx == nullptr) {
    return absl::InternalError(absl::StrCat("TLS: ", OpenSslError()));
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert-file ", cert_file,
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
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key-file ", key_file,
                     ": the key does not match the certificate in ",
                     cert_file));
  }
  return ctx;
}

}  // namespace

void SslCtxFree::operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }

absl::StatusOr<std::unique_ptr<TlsContext>> TlsContext::Load(
    std::string cert_file, std::string key_file) {
  std::string stamp = FileStamp(cert_file) + " " + FileStamp(key_file);
  absl::StatusOr<SslCtxPtr> ctx = MakeContext(cert_file, key_file);
  if (!ctx.ok()) return ctx.status();
  return std::make_unique<TlsContext>(std::move(cert_file),
                                      std::move(key_file), *std::move(ctx),
                                      std::move(stamp));
}

TlsContext::TlsContext(std::string cert_file, std::string key_file,
                       SslCtxPtr ctx, std::string stamp)
    : cert_file_(std::move(cert_file)),
      key_file_(std::move(key_file)),
      ctx_(std::move(ctx)),
      stamp_(std::move(stamp)) {}

SslCtxPtr TlsContext::Get() {
  const std::string stamp = FileStamp(cert_file_) + " " + FileStamp(key_file_);
  absl::MutexLock lock(&mu_);
  if (stamp != stamp_) {
    stamp_ = stamp;
    absl::StatusOr<SslCtxPtr> fresh = MakeContext(cert_file_, key_file_);
    if (fresh.ok()) {
      ctx_ = *std::move(fresh);
      GPULET_LOG(INFO) << "TLS certificate reloaded from " << cert_file_;
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
