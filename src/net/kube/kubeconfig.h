// Where the Kubernetes API server is and how to authenticate to it: from
// kubeconfig files (kubectl's format) or from the pod's service account
// (in-cluster). The result, ApiServerConfig, is what the `kube` layer's
// HTTPS transport is built from.
//
// Kubeconfig: the context named `context` (or `current-context`) selects a
// cluster (server, certificate-authority or certificate-authority-data) and
// a user (client-certificate[-data] + client-key[-data], token, tokenFile,
// and impersonation: as, as-uid, as-groups, as-user-extra, impersonation.h),
// or an exec credential plugin (exec_config.h).
// Relative file paths are relative to the directory of the kubeconfig that
// holds them, as in kubectl. Certificates and keys are read when the file is
// loaded; client-certificate/client-key files are also kept as paths, so the
// transport picks up a rotated pair, and so is a token file (bound
// service-account tokens rotate). `insecure-skip-tls-verify: true` is
// rejected: gpulet always verifies the API server's certificate.
// Authentication gpulet does not implement (auth providers, basic auth),
// proxies, and any user field gpulet does not know (it could change whose
// identity the requests carry) are rejected with an error naming the field
// rather than ignored.
//
// Several kubeconfigs ($KUBECONFIG, ':'-separated) are merged the way
// kubectl merges them: a context, cluster or user comes from the first file
// that has one by that name, current-context from the first file that sets
// it; files that do not exist are skipped. An explicit --kubeconfig is one
// file and must exist.
//
// In-cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the
// CA from <dir>/ca.crt, the token file <dir>/token and the namespace from
// <dir>/namespace, dir being /var/run/secrets/kubernetes.io/serviceaccount
// unless a test says otherwise (in_cluster_config.cc).
//
// Parsing takes strings; loading reads the files. Errors name the file and
// the field ("kubeconfig /x: users[0].user.client-key-data: not base64").
// Thread safety: plain values and pure functions.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/net/kube/exec_config.h"
#include "src/net/kube/impersonation.h"

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
  // Where client_cert_pem and client_key_pem were read from, when from
  // files: the transport re-reads them as they rotate. Absolute paths.
  std::string client_cert_file;
  std::string client_key_file;
  std::string token;            // a static bearer token
  std::string token_file;       // a bearer token re-read as it rotates
  std::string namespace_name;   // the context's or service account's namespace
  std::string source;           // "kubeconfig /path" or "in-cluster config"
  Impersonation impersonation;  // the user's as, as-uid, as-groups, ...
  // The user's exec credential plugin; the transport runs it (and uses no
  // token or client certificate of its own then).
  std::optional<ExecConfig> exec;
};

// A kubeconfig selection before its files are read: file references are
// still paths (config.client_cert_file, client_key_file and token_file
// too), -data fields are decoded.
struct KubeconfigSelection {
  ApiServerConfig config;
  std::string ca_file;
};

// Parses kubeconfig text and selects `context` (empty: current-context).
// `source` names the text in errors; file paths stay as written.
absl::StatusOr<KubeconfigSelection> ParseKubeconfig(
    absl::string_view text, const std::string& source,
    const std::string& context = "");

// One kubeconfig file's path and text.
struct KubeconfigText {
  std::string path;
  std::string text;
};

// Merges `files` as kubectl does (first wins, see above) and selects
// `context`; relative paths resolve against each file's own directory.
absl::StatusOr<KubeconfigSelection> SelectKubeconfig(
    const std::vector<KubeconfigText>& files, const std::string& context = "");

// Reads the kubeconfig at `path`, selects `context` and reads the files it
// refers to. Relative paths resolve against the kubeconfig's directory.
absl::StatusOr<ApiServerConfig> LoadKubeconfig(const std::string& path,
                                               const std::string& context = "");

// $KUBECONFIG's value: the ':'-separated files that exist, merged, then as
// LoadKubeconfig. NotFound naming the list when none of them exists.
absl::StatusOr<ApiServerConfig> LoadKubeconfigList(
    absl::string_view list, const std::string& context = "");

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

// How each gpulet component finds its API server: the kubeconfig file
// `kubeconfig` (--kubeconfig) when one is given, else the files of
// $KUBECONFIG (read through options.getenv) merged, else the pod's service
// account. `context` selects a kubeconfig context.
absl::StatusOr<ApiServerConfig> LoadApiServerConfig(
    const std::string& kubeconfig, const std::string& context = "",
    const InClusterOptions& options = {});

}  // namespace gpulet::config
