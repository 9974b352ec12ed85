// Certificates for tests of TLS code: a CA, and leaf certificates it signs
// for a server (subjectAltName IP:127.0.0.1) or a client, made in memory
// with OpenSSL (EC P-256, valid for a day), and their PEM read back into
// the OpenSSL objects a test's server is given. Test-only.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <openssl/types.h>

#include <memory>
#include <string>

namespace gpulet::kube::tls_test {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;
};

// A self-signed CA named `name`.
KeyPair MakeCa(const std::string& name);

// A certificate signed by `ca`: for a server at 127.0.0.1 (server auth) or
// a client with common name `name` (client auth).
KeyPair MakeLeaf(const KeyPair& ca, const std::string& name, bool server);

// The public half of a PEM private key, as a PEM "PUBLIC KEY".
std::string PublicKeyPem(const std::string& key_pem);

struct OpenSslFree {
  void operator()(X509* cert) const;
  void operator()(EVP_PKEY* key) const;
};
using CertPtr = std::unique_ptr<X509, OpenSslFree>;
using KeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree>;

// The (first) certificate of a PEM text, and a PEM private key. The PEM is
// the test's own: one that does not parse aborts, naming the OpenSSL call.
CertPtr ReadCert(const std::string& pem);
KeyPtr ReadKey(const std::string& pem);

}  // namespace gpulet::kube::tls_test
