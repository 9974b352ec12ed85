#include "src/net/kube/tls_client_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace gpulet::kube {
namespace {

struct Free {
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using BioPtr = std::unique_ptr<BIO, Free>;
using CertPtr = std::unique_ptr<X509, Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Free>;

BioPtr MemBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Every certificate in `pem`, in order.
std::vector<CertPtr> ReadCerts(const std::string& pem) {
  std::vector<CertPtr> certs;
  BioPtr bio = MemBio(pem);
  while (bio != nullptr) {
    CertPtr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) break;
    certs.push_back(std::move(cert));
  }
  ERR_clear_error();  // the end of the input reads as an error
  return certs;
}

absl::Status Invalid(const config::ApiServerConfig& config,
                     absl::string_view what) {
  ERR_clear_error();
  return absl::InvalidArgumentError(absl::StrCat(config.source, ": ", what));
}

absl::Status AddClientIdentity(SSL_CTX* ctx,
                               const config::ApiServerConfig& config) {
  std::vector<CertPtr> chain = ReadCerts(config.client_cert_pem);
  if (chain.empty()) {
    return Invalid(config, "client certificate: no PEM certificate in it");
  }
  if (SSL_CTX_use_certificate(ctx, chain[0].get()) != 1) {
    return Invalid(config, "client certificate: refused by OpenSSL");
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx, chain[i].get()) != 1) {
      return Invalid(config, "client certificate: chain refused by OpenSSL");
    }
  }
  BioPtr bio = MemBio(config.client_key_pem);
  KeyPtr key(bio != nullptr
                 ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                 : nullptr);
  if (key == nullptr) {
    return Invalid(config, "client key: not a PEM private key");
  }
  if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    return Invalid(config, "client key does not match the client certificate");
  }
  return absl::OkStatus();
}

}  // namespace

void SslCtxFree::operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }

absl::StatusOr<SslCtxPtr> NewClientContext(
    const config::ApiServerConfig& config) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (ctx == nullptr) {
    ERR_clear_error();
    return absl::ResourceExhaustedError("SSL_CTX_new failed");
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(),
                      SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  static constexpr unsigned char kAlpn[] = "\x08http/1.1";
  SSL_CTX_set_alpn_protos(ctx.get(), kAlpn, sizeof(kAlpn) - 1);
  if (!config.ca_pem.empty()) {
    std::vector<CertPtr> cas = ReadCerts(config.ca_pem);
    if (cas.empty()) {
      return Invalid(config, "certificate authority: no PEM certificate in it");
    }
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    for (const CertPtr& ca : cas) X509_STORE_add_cert(store, ca.get());
    ERR_clear_error();  // a duplicate certificate is no error
  } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
    ERR_clear_error();
  }
  if (!config.client_cert_pem.empty()) {
    if (absl::Status s = AddClientIdentity(ctx.get(), config); !s.ok()) {
      return s;
    }
  }
  return ctx;
}

}  // namespace gpulet::kube
