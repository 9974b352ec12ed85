// ExecConfig: a kubeconfig user's `exec` section, the credential plugin
// kubectl runs to get a token or client certificate (EKS's `aws eks
// get-token`, GKE's gke-gcloud-auth-plugin, AKS's kubelogin), as the
// client.authentication.k8s.io v1 and v1beta1 contract defines it:
// apiVersion, command, args, env (a list of name/value), installHint,
// provideClusterInfo and interactiveMode (Never, IfAvailable, Always;
// required with v1, IfAvailable by default with v1beta1). v1alpha1 is gone
// from Kubernetes and refused here.
//
// The plugin is run by exec_plugin.h; this file only reads the kubeconfig.
// Errors name the source and the field, as kubeconfig.h's do
// ("kubeconfig /x: users[0].user.exec.interactiveMode: ...").
//
// Thread safety: plain values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace gpulet::config {

inline constexpr char kExecApiV1[] = "client.authentication.k8s.io/v1";
inline constexpr char kExecApiV1beta1[] =
    "client.authentication.k8s.io/v1beta1";
// The name of a cluster's extension whose value goes to the plugin as
// spec.cluster.config.
inline constexpr char kExecClusterExtension[] =
    "client.authentication.k8s.io/exec";

enum class InteractiveMode { kNever, kIfAvailable, kAlways };

struct ExecConfig {
  std::string user;  // the kubeconfig user's name, for messages
  std::string api_version;
  std::string command;  // as written; see exec_plugin.h for how it resolves
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string install_hint;
  bool provide_cluster_info = false;
  InteractiveMode interactive_mode = InteractiveMode::kIfAvailable;
  // The kubeconfig's directory: a relative command with a slash is
  // relative to it. Set by LoadKubeconfig.
  std::string base_dir;
  // The cluster's kExecClusterExtension as JSON text, "" when it has none.
  std::string cluster_config_json;
};

// Reads `exec` (the JSON form of the YAML), found at `path` of `source`,
// for the user named `user`.
absl::StatusOr<ExecConfig> ParseExecConfig(const nlohmann::ordered_json& exec,
                                           const std::string& source,
                                           const std::string& path,
                                           const std::string& user);

// The `exec` of the kubeconfig user `user` (the JSON at `user_path`), with
// the extension of the context's cluster (at `cluster_path`); nullopt when
// the user has none. An exec plugin is the user's one way to authenticate:
// with a token, tokenFile or client certificate beside it, an error.
absl::StatusOr<std::optional<ExecConfig>> ReadUserExec(
    const nlohmann::ordered_json& user_json, const std::string& user_path,
    const nlohmann::ordered_json& cluster_json, const std::string& cluster_path,
    const std::string& source, const std::string& user);

}  // namespace gpulet::config
