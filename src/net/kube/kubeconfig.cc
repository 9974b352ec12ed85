#include "src/net/kube/kubeconfig.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/base/common/status_macros.h"
#include "src/base/config/yaml_json.h"

namespace gpulet::config {
namespace {

using Json = nlohmann::ordered_json;

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  absl::Status Error(const std::string& path, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": ", path, ": ", what));
  }

  // The string at `obj[key]`; "" when absent or null.
  absl::StatusOr<std::string> String(const Json& obj, const std::string& path,
                                     const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::string();
    if (!it->is_string()) {
      return Error(absl::StrCat(path, ".", key), "expected a string");
    }
    return it->get<std::string>();
  }

  // Base64 `obj[key]`, decoded; "" when absent.
  absl::StatusOr<std::string> Data(const Json& obj, const std::string& path,
                                   const char* key) const {
    GPULET_ASSIGN_OR_RETURN(std::string text, String(obj, path, key));
    std::string out;
    if (!absl::Base64Unescape(text, &out)) {
      return Error(absl::StrCat(path, ".", key), "not valid base64");
    }
    return out;
  }

  // The entry of the named list `list_key` whose name is `name`, as the
  // object under `item_key`.
  absl::StatusOr<std::pair<Json, std::string>> Named(
      const Json& root, const char* list_key, const char* item_key,
      const std::string& name, const std::string& wanted_by) const {
    auto list = root.find(list_key);
    if (list != root.end() && !list->is_null() && !list->is_array()) {
      return Error(list_key, "expected a list");
    }
    if (list != root.end() && list->is_array()) {
      for (size_t i = 0; i < list->size(); ++i) {
        const Json& entry = (*list)[i];
        std::string path = absl::StrCat(list_key, "[", i, "]");
        if (!entry.is_object()) return Error(path, "expected a map");
        GPULET_ASSIGN_OR_RETURN(std::string entry_name,
                                String(entry, path, "name"));
        if (entry_name != name) continue;
        auto item = entry.find(item_key);
        if (item == entry.end() || !item->is_object()) {
          return Error(absl::StrCat(path, ".", item_key), "expected a map");
        }
        return std::make_pair(*item, absl::StrCat(path, ".", item_key));
      }
    }
    return Error(wanted_by,
                 absl::StrCat("no entry named \"", name, "\" in ", list_key));
  }

 private:
  std::string source_;
};

absl::Status RejectPresent(const Reader& r, const Json& obj,
                           const std::string& path,
                           const std::vector<const char*>& keys,
                           absl::string_view why) {
  for (const char* key : keys) {
    auto it = obj.find(key);
    if (it != obj.end() && !it->is_null()) {
      return r.Error(absl::StrCat(path, ".", key), why);
    }
  }
  return absl::OkStatus();
}

absl::Status ReadCluster(const Reader& r, const Json& cluster,
                         const std::string& path, KubeconfigSelection& out) {
  GPULET_ASSIGN_OR_RETURN(out.config.server, r.String(cluster, path, "server"));
  if (out.config.server.empty()) {
    return r.Error(absl::StrCat(path, ".server"), "missing");
  }
  if (!absl::StartsWith(out.config.server, "https://")) {
    return r.Error(absl::StrCat(path, ".server"),
                   "must be an https:// URL (gpulet talks to the API server "
                   "over TLS only)");
  }
  while (absl::EndsWith(out.config.server, "/")) out.config.server.pop_back();
  auto insecure = cluster.find("insecure-skip-tls-verify");
  // Anything but false (including YAML 1.1's "yes", which kubectl reads
  // as true) is refused.
  if (insecure != cluster.end() && !insecure->is_null() &&
      !(insecure->is_boolean() && !insecure->get<bool>())) {
    return r.Error(absl::StrCat(path, ".insecure-skip-tls-verify"),
                   "not supported: gpulet always verifies the API server's "
                   "certificate; give certificate-authority instead");
  }
  GPULET_RETURN_IF_ERROR(RejectPresent(r, cluster, path,
                                       {"proxy-url", "tls-server-name"},
                                       "not supported by gpulet"));
  GPULET_ASSIGN_OR_RETURN(out.ca_file,
                          r.String(cluster, path, "certificate-authority"));
  GPULET_ASSIGN_OR_RETURN(out.config.ca_pem,
                          r.Data(cluster, path, "certificate-authority-data"));
  return absl::OkStatus();
}

absl::Status ReadUser(const Reader& r, const Json& user,
                      const std::string& path, KubeconfigSelection& out) {
  GPULET_RETURN_IF_ERROR(RejectPresent(
      r, user, path, {"auth-provider", "username", "password"},
      "not supported by gpulet (use a client certificate or a token)"));
  GPULET_ASSIGN_OR_RETURN(out.client_cert_file,
                          r.String(user, path, "client-certificate"));
  GPULET_ASSIGN_OR_RETURN(out.config.client_cert_pem,
                          r.Data(user, path, "client-certificate-data"));
  GPULET_ASSIGN_OR_RETURN(out.client_key_file,
                          r.String(user, path, "client-key"));
  GPULET_ASSIGN_OR_RETURN(out.config.client_key_pem,
                          r.Data(user, path, "client-key-data"));
  GPULET_ASSIGN_OR_RETURN(out.config.token, r.String(user, path, "token"));
  GPULET_ASSIGN_OR_RETURN(out.config.token_file,
                          r.String(user, path, "tokenFile"));
  const bool has_cert =
      !out.client_cert_file.empty() || !out.config.client_cert_pem.empty();
  const bool has_key =
      !out.client_key_file.empty() || !out.config.client_key_pem.empty();
  if (has_cert != has_key) {
    return r.Error(path, "client-certificate and client-key go together");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadPem(const std::string& base_dir,
                                    const std::string& file,
                                    const std::string& source,
                                    absl::string_view field) {
  std::filesystem::path p(file);
  if (p.is_relative()) p = std::filesystem::path(base_dir) / p;
  absl::StatusOr<std::string> text = common::ReadFile(p.string());
  if (!text.ok()) {
    return common::Annotate(text.status(), absl::StrCat(source, ": ", field));
  }
  return text;
}

std::optional<std::string> GetEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace

absl::StatusOr<KubeconfigSelection> ParseKubeconfig(
    absl::string_view text, const std::string& source,
    const std::string& context) {
  GPULET_ASSIGN_OR_RETURN(Json root, YamlToJson(text, source));
  Reader r(source);
  if (!root.is_object()) return r.Error("(top level)", "expected a map");
  std::string name = context;
  if (name.empty()) {
    GPULET_ASSIGN_OR_RETURN(name, r.String(root, "", "current-context"));
    if (name.empty()) {
      return r.Error("current-context", "missing, and no context was given");
    }
  }
  KubeconfigSelection out;
  out.config.source = absl::StrCat("kubeconfig ", source);
  GPULET_ASSIGN_OR_RETURN(
      auto ctx, r.Named(root, "contexts", "context", name,
                        context.empty() ? "current-context" : "context"));
  const std::string& ctx_path = ctx.second;
  GPULET_ASSIGN_OR_RETURN(std::string cluster_name,
                          r.String(ctx.first, ctx_path, "cluster"));
  GPULET_ASSIGN_OR_RETURN(std::string user_name,
                          r.String(ctx.first, ctx_path, "user"));
  GPULET_ASSIGN_OR_RETURN(out.config.namespace_name,
                          r.String(ctx.first, ctx_path, "namespace"));
  if (out.config.namespace_name.empty()) out.config.namespace_name = "default";

  GPULET_ASSIGN_OR_RETURN(auto cluster,
                          r.Named(root, "clusters", "cluster", cluster_name,
                                  absl::StrCat(ctx_path, ".cluster")));
  GPULET_RETURN_IF_ERROR(ReadCluster(r, cluster.first, cluster.second, out));
  if (!user_name.empty()) {
    GPULET_ASSIGN_OR_RETURN(auto user,
                            r.Named(root, "users", "user", user_name,
                                    absl::StrCat(ctx_path, ".user")));
    GPULET_RETURN_IF_ERROR(ReadUser(r, user.first, user.second, out));
    GPULET_ASSIGN_OR_RETURN(out.config.exec,
                            ReadUserExec(user.first, user.second, cluster.first,
                                         cluster.second, source, user_name));
  }
  return out;
}

absl::StatusOr<ApiServerConfig> LoadKubeconfig(const std::string& path,
                                               const std::string& context) {
  GPULET_ASSIGN_OR_RETURN(std::string text, common::ReadFile(path));
  GPULET_ASSIGN_OR_RETURN(KubeconfigSelection sel,
                          ParseKubeconfig(text, path, context));
  const std::string base = std::filesystem::path(path).parent_path().string();
  const std::string& src = sel.config.source;
  if (sel.config.exec) sel.config.exec->base_dir = base;
  if (!sel.ca_file.empty() && sel.config.ca_pem.empty()) {
    GPULET_ASSIGN_OR_RETURN(
        sel.config.ca_pem,
        ReadPem(base, sel.ca_file, src, "certificate-authority"));
  }
  if (!sel.client_cert_file.empty() && sel.config.client_cert_pem.empty()) {
    GPULET_ASSIGN_OR_RETURN(
        sel.config.client_cert_pem,
        ReadPem(base, sel.client_cert_file, src, "client-certificate"));
  }
  if (!sel.client_key_file.empty() && sel.config.client_key_pem.empty()) {
    GPULET_ASSIGN_OR_RETURN(
        sel.config.client_key_pem,
        ReadPem(base, sel.client_key_file, src, "client-key"));
  }
  if (!sel.config.token_file.empty() &&
      std::filesystem::path(sel.config.token_file).is_relative()) {
    sel.config.token_file =
        (std::filesystem::path(base) / sel.config.token_file).string();
  }
  return sel.config;
}

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
  GPULET_ASSIGN_OR_RETURN(config.ca_pem,
                          ReadPem(dir, "ca.crt", config.source, "ca.crt"));
  config.token_file = (std::filesystem::path(dir) / "token").string();
  // Fail early on an unreadable token rather than at the first request.
  GPULET_ASSIGN_OR_RETURN(std::string token,
                          ReadPem(dir, "token", config.source, "token"));
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
    const std::string& kubeconfig, const std::string& context) {
  if (!kubeconfig.empty()) return LoadKubeconfig(kubeconfig, context);
  return LoadInClusterConfig();
}

}  // namespace gpulet::config
