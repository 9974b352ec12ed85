// Certificates for tests of TLS code: a CA, and leaf certificates it signs
// for a server (subjectAltName IP:127.0.0.1) or a client, made in memory
// with OpenSSL (EC P-256, valid for a day). Test-only.
//
// Thread safety: plain values and pure functions.
#pragma once

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

}  // namespace gpulet::kube::tls_test
