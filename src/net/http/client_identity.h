// ClientIdentity: who a TLS client proved to be, from the certificate it
// presented and OpenSSL verified against the server's client CA, and the
// check against an allow-list of names. Internal to Server.
//
// Thread safety: plain values and pure functions (Of() reads one SSL
// object, used by one thread).
#pragma once

#include <string>
#include <vector>

typedef struct ssl_st SSL;

namespace gpulet::http {

struct ClientIdentity {
  // A certificate was presented and chains to the client CA.
  bool verified = false;
  std::string common_name;             // the subject's CN ("" when none)
  std::vector<std::string> dns_names;  // DNS subjectAltNames

  // The verified client's names for a log line: "CN=x, DNS=y".
  std::string Describe() const;

  // The identity `ssl`'s peer proved in the finished handshake; not
  // verified when it sent no certificate or verification failed.
  static ClientIdentity Of(SSL* ssl);
};

// True when `client` is verified and, for a non-empty `allowed`, its
// common name or one of its DNS names is in it (DNS names compared
// ignoring case, as DNS does; the common name exactly).
bool ClientAllowed(const ClientIdentity& client,
                   const std::vector<std::string>& allowed);

}  // namespace gpulet::http
