// The two ExecCredential documents of the client.authentication.k8s.io
// contract (v1 and v1beta1), as values: the one gpulet hands an exec
// credential plugin in $KUBERNETES_EXEC_INFO (apiVersion, kind and
// spec.interactive; spec.cluster with provideClusterInfo), and the one the
// plugin prints on its standard output (status.token, or
// status.clientCertificateData + clientKeyData as PEM, and an optional
// status.expirationTimestamp in RFC 3339).
//
// The answer must carry the apiVersion the request had and kind
// ExecCredential. Error messages name the plugin (`who`) and the field, and
// never quote the answer: it holds the credential.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/net/kube/exec_config.h"

namespace gpulet::kube {

inline constexpr char kExecInfoEnv[] = "KUBERNETES_EXEC_INFO";

// What a plugin returned. Never log it.
struct ExecCredential {
  std::string token;
  std::string client_cert_pem;  // set together with client_key_pem
  std::string client_key_pem;
  // On the wall clock; InfiniteFuture when the plugin gave none (then it
  // is kept until the server refuses it).
  absl::Time expiry = absl::InfiniteFuture();
};

// The cluster as the plugin sees it with provideClusterInfo.
struct ExecClusterInfo {
  std::string server;
  std::string ca_pem;  // empty: the system's trust store
};

// The value of KUBERNETES_EXEC_INFO. `cluster` is used only when the
// config asks for it (provideClusterInfo).
std::string ExecInfoJson(const config::ExecConfig& exec, bool interactive,
                         const ExecClusterInfo& cluster);

// Decodes the plugin's standard output.
absl::StatusOr<ExecCredential> ParseExecCredential(
    absl::string_view output, const std::string& api_version,
    const std::string& who);

}  // namespace gpulet::kube
