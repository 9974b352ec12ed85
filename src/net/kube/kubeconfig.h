// Where the Kubernetes API server is and how to authenticate to it: from a
// kubeconfig file (kubectl's format) or from the pod's service account
// (in-cluster). The result, ApiServerConfig, is what the `kube` layer's
// HTTPS transport is built from.
//
// Kubeconfig: the context named `context` (or `current-context`) selects a
// cluster (server, certificate-authority or certificate-authority-data) and
// a user (client-certificate[-data] + client-key[-data], token, tokenFile,
// or an exec credential plugin: exec_config.h).
// Relative file paths are relative to the kubeconfig's directory, as in
// kubectl. Certificates and keys are read when the file is loaded; a token
// file is kept as a path because bound service-account tokens rotate and
// the transport re-reads it. `insecure-skip-tls-verify: true` is rejected:
// gpulet always verifies the API server's certificate. Authentication gpulet
// does not implement (auth providers, basic auth) and proxies
// are rejected with an error naming the field rather than ignored.
//
// In-cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the
// CA from <dir>/ca.crt, the token file <dir>/token and the namespace from
// <dir>/namespace, dir being /var/run/secrets/kubernetes.io/serviceaccount
// unless a test says otherwise.
//
// Parsing takes a string; loading reads the files. Errors name the file and
// the field ("kubeconfig /x: users[0].user.client-key-data: not base64").
// Thread safety: plain values and pure functions.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/net/kube/exec_config.h"

namespace gpulet::config {

inline constexpr char kServiceAccountDir[] =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// Credentials and trust for one API server. PEM strings hold the material
// itself; never log them.
struct ApiServerConfig {
  std::string server;           // "https://host:port", no trailing slash
  std::string ca_pem;           // empty: the system's trust store
  std::string client_cert_pem;  // set together with client_key_pem
  std::string client_key_pem;
  std::string token;           // a static bearer token
  std::string token_file;      // a bearer token re-read as it rotates
  std::string namespace_name;  // the context's or service account's namespace
  std::string source;          // "kubeconfig /path" or "in-cluster config"
  // The user's exec credential plugin; the transport runs it (and uses no
  // token or client certificate of its own then).
  std::optional<ExecConfig> exec;
};

// A kubeconfig as written: file references are still paths (absolute or
// relative to the kubeconfig's directory), -data fields are decoded.
struct KubeconfigSelection {
  ApiServerConfig config;
  std::string ca_file;
  std::string client_cert_file;
  std::string client_key_file;
};

// Parses kubeconfig text and selects `context` (empty: current-context).
// `source` names the text in errors.
absl::StatusOr<KubeconfigSelection> ParseKubeconfig(
    absl::string_view text, const std::string& source,
    const std::string& context = "");

// Reads the kubeconfig at `path`, selects `context` and reads the files it
// refers to. Relative paths resolve against the kubeconfig's directory.
absl::StatusOr<ApiServerConfig> LoadKubeconfig(const std::string& path,
                                               const std::string& context = "");

struct InClusterOptions {
  std::string service_account_dir = kServiceAccountDir;
  // Reads an environment variable; nullopt when unset. Default: getenv.
  std::function<std::optional<std::string>(const std::string&)> getenv;
};

// The pod's own service account. FailedPrecondition when the environment
// variables are missing (not running in a pod); NotFound and friends when
// ca.crt or token cannot be read.
absl::StatusOr<ApiServerConfig> LoadInClusterConfig(
    const InClusterOptions& options = {});

// How each gpulet component finds its API server: the kubeconfig at
// `kubeconfig` (and `context`) when one is given, the pod's service account
// otherwise.
absl::StatusOr<ApiServerConfig> LoadApiServerConfig(
    const std::string& kubeconfig, const std::string& context = "");

}  // namespace gpulet::config
