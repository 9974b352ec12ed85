#include "src/net/http/client_identity.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpulet::http {
namespace {

// The bytes of an ASN.1 string, "" when they hold a NUL (a name forged to
// read differently in C strings).
std::string Text(const ASN1_STRING* s) {
  if (s == nullptr) return "";
  std::string out(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                  static_cast<size_t>(ASN1_STRING_length(s)));
  return out.find('\0') == std::string::npos ? out : "";
}

std::string CommonName(X509* cert) {
  const X509_NAME* subject = X509_get_subject_name(cert);
  if (subject == nullptr) return "";
  const int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (at < 0) return "";
  // A second CN makes the name ambiguous: none is taken.
  if (X509_NAME_get_index_by_NID(subject, NID_commonName, at) >= 0) return "";
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(
      &utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at)));
  if (n < 0) return "";
  std::string out(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out.find('\0') == std::string::npos ? out : "";
}

std::vector<std::string> DnsNames(X509* cert) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_DNS) continue;
    std::string dns = Text(name->d.dNSName);
    if (!dns.empty()) out.push_back(std::move(dns));
  }
  GENERAL_NAMES_free(names);
  return out;
}

}  // namespace

std::string ClientIdentity::Describe() const {
  if (!verified) return "no verified certificate";
  std::string out = absl::StrCat("CN=", common_name);
  for (const std::string& dns : dns_names) absl::StrAppend(&out, ", DNS=", dns);
  return out;
}

ClientIdentity ClientIdentity::Of(SSL* ssl) {
  ClientIdentity out;
  if (ssl == nullptr) return out;
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return out;
  out.verified = SSL_get_verify_result(ssl) == X509_V_OK;
  if (out.verified) {
    out.common_name = CommonName(cert);
    out.dns_names = DnsNames(cert);
  }
  X509_free(cert);
  return out;
}

bool ClientAllowed(const ClientIdentity& client,
                   const std::vector<std::string>& allowed) {
  if (!client.verified) return false;
  if (allowed.empty()) return true;
  for (const std::string& name : allowed) {
    if (!client.common_name.empty() && client.common_name == name) return true;
    for (const std::string& dns : client.dns_names) {
      if (absl::EqualsIgnoreCase(dns, name)) return true;
    }
  }
  return false;
}

}  // namespace gpulet::http
