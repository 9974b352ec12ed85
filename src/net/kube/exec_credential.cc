#include "src/net/kube/exec_credential.h"

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace gpulet::kube {
namespace {

using Json = nlohmann::ordered_json;

absl::Status Bad(const std::string& who, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(who, ": its answer on standard output ", what));
}

// status[key] as a string: "" when absent or null.
absl::StatusOr<std::string> StatusString(const Json& status, const char* key,
                                         const std::string& who) {
  auto it = status.find(key);
  if (it == status.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return Bad(who, absl::StrCat("has status.", key, " not a string"));
  }
  return it->get<std::string>();
}

absl::StatusOr<absl::Time> Expiry(const Json& status, const std::string& who) {
  absl::StatusOr<std::string> text =
      StatusString(status, "expirationTimestamp", who);
  if (!text.ok()) return text.status();
  if (text->empty()) return absl::InfiniteFuture();
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, *text, &t, &err)) {
    return Bad(who, absl::StrCat("has status.expirationTimestamp \"", *text,
                                 "\", not an RFC 3339 time"));
  }
  return t;
}

}  // namespace

std::string ExecInfoJson(const config::ExecConfig& exec, bool interactive,
                         const ExecClusterInfo& cluster) {
  Json spec = {{"interactive", interactive}};
  if (exec.provide_cluster_info) {
    Json c = {{"server", cluster.server}};
    if (!cluster.ca_pem.empty()) {
      c["certificate-authority-data"] = absl::Base64Escape(cluster.ca_pem);
    }
    if (!exec.cluster_config_json.empty()) {
      c["config"] = Json::parse(exec.cluster_config_json, nullptr, false);
    }
    spec["cluster"] = std::move(c);
  }
  return Json{{"apiVersion", exec.api_version},
              {"kind", "ExecCredential"},
              {"spec", std::move(spec)}}
      .dump();
}

absl::StatusOr<ExecCredential> ParseExecCredential(
    absl::string_view output, const std::string& api_version,
    const std::string& who) {
  // No exceptions, and no message from the parser: it would quote the
  // bytes around the error, which may be the token.
  const Json doc = Json::parse(output.begin(), output.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Bad(who, "is not a JSON ExecCredential object");
  }
  const Json api = doc.value("apiVersion", Json());
  if (api != api_version) {
    return Bad(
        who,
        absl::StrCat("has apiVersion ", api.is_string() ? api.dump() : "(none)",
                     ", but the kubeconfig asked for ", api_version));
  }
  if (doc.value("kind", Json()) != "ExecCredential") {
    return Bad(who, "is not of kind ExecCredential");
  }
  auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return Bad(who, "has no status");
  }
  ExecCredential cred;
  absl::StatusOr<std::string> field = StatusString(*status, "token", who);
  if (!field.ok()) return field.status();
  cred.token = *std::move(field);
  field = StatusString(*status, "clientCertificateData", who);
  if (!field.ok()) return field.status();
  cred.client_cert_pem = *std::move(field);
  field = StatusString(*status, "clientKeyData", who);
  if (!field.ok()) return field.status();
  cred.client_key_pem = *std::move(field);
  if (cred.client_cert_pem.empty() != cred.client_key_pem.empty()) {
    return Bad(who,
               "has only one of status.clientCertificateData and "
               "status.clientKeyData");
  }
  if (cred.token.empty() && cred.client_cert_pem.empty()) {
    return Bad(who, "has neither status.token nor a client certificate");
  }
  if (cred.token.find_first_of("\r\n") != std::string::npos) {
    return Bad(who, "has a status.token with a line break");
  }
  absl::StatusOr<absl::Time> expiry = Expiry(*status, who);
  if (!expiry.ok()) return expiry.status();
  cred.expiry = *expiry;
  return cred;
}

}  // namespace gpulet::kube
