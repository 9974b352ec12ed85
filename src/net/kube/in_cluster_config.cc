// The pod's own service account as an ApiServerConfig, and the order in
// which a gpulet process looks for its API server (kubeconfig.h).
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/base/common/status_macros.h"
#include "src/net/kube/kubeconfig.h"

namespace gpulet::config {
namespace {

std::optional<std::string> GetEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

absl::StatusOr<std::string> ReadIn(const std::string& dir,
                                   const std::string& name,
                                   const std::string& source) {
  absl::StatusOr<std::string> text =
      common::ReadFile((std::filesystem::path(dir) / name).string());
  if (!text.ok()) {
    return common::Annotate(text.status(), absl::StrCat(source, ": ", name));
  }
  return text;
}

}  // namespace

absl::StatusOr<ApiServerConfig> LoadInClusterConfig(
    const InClusterOptions& options) {
  auto getenv = options.getenv ? options.getenv : GetEnv;
  std::optional<std::string> host = getenv("KUBERNETES_SERVICE_HOST");
  std::optional<std::string> port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || host->empty() || port->empty()) {
    return absl::FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT must be set (not running in a pod?)");
  }
  ApiServerConfig config;
  config.source = "in-cluster config";
  // An IPv6 service address needs brackets in a URL.
  const bool v6 = absl::StrContains(*host, ':');
  config.server =
      absl::StrCat("https://", v6 ? "[" : "", *host, v6 ? "]" : "", ":", *port);
  const std::string dir = options.service_account_dir;
  GPULET_ASSIGN_OR_RETURN(config.ca_pem, ReadIn(dir, "ca.crt", config.source));
  config.token_file = (std::filesystem::path(dir) / "token").string();
  // Fail early on an unreadable token rather than at the first request.
  GPULET_ASSIGN_OR_RETURN(std::string token,
                          ReadIn(dir, "token", config.source));
  if (absl::StripAsciiWhitespace(token).empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(config.source, ": ", config.token_file, " is empty"));
  }
  absl::StatusOr<std::string> ns =
      common::ReadFile((std::filesystem::path(dir) / "namespace").string());
  config.namespace_name =
      ns.ok() ? std::string(absl::StripAsciiWhitespace(*ns)) : "default";
  return config;
}

absl::StatusOr<ApiServerConfig> LoadApiServerConfig(
    const std::string& kubeconfig, const std::string& context,
    const InClusterOptions& options) {
  if (!kubeconfig.empty()) return LoadKubeconfig(kubeconfig, context);
  auto getenv = options.getenv ? options.getenv : GetEnv;
  if (std::optional<std::string> list = getenv("KUBECONFIG");
      list.has_value() && !list->empty()) {
    return LoadKubeconfigList(*list, context);
  }
  return LoadInClusterConfig(options);
}

}  // namespace gpulet::config
