#include "src/net/testing/test_tls.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdlib>
#include <iostream>
#include <memory>

namespace gpulet::kube::tls_test {
namespace {

struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::cerr << "test_tls: " << what << " failed\n";
    std::abort();
  }
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);  // NOLINT(runtime/int)
  return std::string(data, static_cast<size_t>(n));
}

std::string KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  Check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr,
                                 nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  return BioText(bio.get());
}

std::string CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  Check(PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
  return BioText(bio.get());
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr, "X509V3_EXT_conf_nid");
  Check(X509_add_ext(cert, ext, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `name`, issued by `issuer` (itself when
// null) and signed with `issuer_key`.
CertPtr MakeCert(EVP_PKEY* key, const std::string& name, X509* issuer,
                 EVP_PKEY* issuer_key, bool ca, bool server) {
  static long serial = 1;  // NOLINT(runtime/int)
  CertPtr cert(X509_new());
  X509* c = cert.get();
  Check(X509_set_version(c, 2) == 1, "X509_set_version");
  ASN1_INTEGER_set(X509_get_serialNumber(c), ++serial);
  X509_gmtime_adj(X509_getm_notBefore(c), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c), 24 * 3600);
  Check(X509_set_pubkey(c, key) == 1, "X509_set_pubkey");
  X509_NAME* subject = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(
      subject, "CN", MBSTRING_ASC,
      reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509* iss = issuer != nullptr ? issuer : c;
  Check(X509_set_issuer_name(c, X509_get_subject_name(iss)) == 1,
        "X509_set_issuer_name");
  AddExtension(c, iss, NID_subject_key_identifier, "hash");
  if (ca) {
    AddExtension(c, iss, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(c, iss, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExtension(c, iss, NID_authority_key_identifier, "keyid");
    AddExtension(c, iss, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(c, iss, NID_key_usage, "critical,digitalSignature");
    AddExtension(c, iss, NID_ext_key_usage,
                 server ? "serverAuth" : "clientAuth");
    if (server) AddExtension(c, iss, NID_subject_alt_name, "IP:127.0.0.1");
  }
  Check(X509_sign(c, issuer_key, EVP_sha256()) > 0, "X509_sign");
  return cert;
}

}  // namespace

void OpenSslFree::operator()(X509* cert) const { X509_free(cert); }
void OpenSslFree::operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }

CertPtr ReadCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  CertPtr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  Check(cert != nullptr, "PEM_read_bio_X509");
  return cert;
}

KeyPtr ReadKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  Check(key != nullptr, "PEM_read_bio_PrivateKey");
  return key;
}

KeyPair MakeCa(const std::string& name) {
  KeyPtr key(EVP_EC_gen("P-256"));
  Check(key != nullptr, "EVP_EC_gen");
  CertPtr cert = MakeCert(key.get(), name, nullptr, key.get(), /*ca=*/true,
                          /*server=*/false);
  return {CertPem(cert.get()), KeyPem(key.get())};
}

KeyPair MakeLeaf(const KeyPair& ca, const std::string& name, bool server) {
  KeyPtr ca_key = ReadKey(ca.key_pem);
  CertPtr ca_cert = ReadCert(ca.cert_pem);
  KeyPtr key(EVP_EC_gen("P-256"));
  Check(key != nullptr, "EVP_EC_gen");
  CertPtr cert = MakeCert(key.get(), name, ca_cert.get(), ca_key.get(),
                          /*ca=*/false, server);
  return {CertPem(cert.get()), KeyPem(key.get())};
}

std::string PublicKeyPem(const std::string& key_pem) {
  KeyPtr key = ReadKey(key_pem);
  BioPtr bio(BIO_new(BIO_s_mem()));
  Check(PEM_write_bio_PUBKEY(bio.get(), key.get()) == 1,
        "PEM_write_bio_PUBKEY");
  return BioText(bio.get());
}

}  // namespace gpulet::kube::tls_test
