#include "src/net/kube/kubeconfig.h"

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
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

  const std::string& source() const { return source_; }

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
  // object under `item_key` and its path; nullopt when there is none.
  using Entry = std::optional<std::pair<Json, std::string>>;
  absl::StatusOr<Entry> Find(const Json& root, const char* list_key,
                             const char* item_key,
                             const std::string& name) const {
    auto list = root.find(list_key);
    if (list == root.end() || list->is_null()) return Entry();
    if (!list->is_array()) return Error(list_key, "expected a list");
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
      return Entry(std::make_pair(*item, absl::StrCat(path, ".", item_key)));
    }
    return Entry();
  }

 private:
  std::string source_;
};

// One kubeconfig being merged: its tree, how its errors are named and the
// directory its relative paths are relative to ("": leave them as written).
struct Doc {
  Json root;
  Reader reader;
  std::string base_dir;
};

// A named entry and the document it came from.
struct Found {
  const Doc* doc;
  Json item;
  std::string path;
};

// The first document's entry named `name` in `list_key` (kubectl's merge:
// the first file to set a key wins). InvalidArgument "<wanted_by>: no entry
// named ..." when none has it.
absl::StatusOr<Found> FindFirst(const std::vector<Doc>& docs,
                                const char* list_key, const char* item_key,
                                const std::string& name,
                                const std::string& wanted_by) {
  for (const Doc& doc : docs) {
    GPULET_ASSIGN_OR_RETURN(
        Reader::Entry entry,
        doc.reader.Find(doc.root, list_key, item_key, name));
    if (entry) return Found{&doc, std::move(entry->first), entry->second};
  }
  return absl::InvalidArgumentError(
      absl::StrCat(wanted_by, ": no entry named \"", name, "\" in ", list_key));
}

std::string Resolve(const std::string& base_dir, const std::string& file) {
  if (base_dir.empty() || file.empty() || file.front() == '/') return file;
  return (std::filesystem::path(base_dir) / file).string();
}

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

// A user field gpulet does not know may change whose identity requests
// carry (kubectl would honour it): refused, never ignored.
absl::Status RejectUnknownUserFields(const Reader& r, const Json& user,
                                     const std::string& path) {
  static const std::set<std::string> kKnown = {"client-certificate",
                                               "client-certificate-data",
                                               "client-key",
                                               "client-key-data",
                                               "token",
                                               "tokenFile",
                                               "as",
                                               "as-uid",
                                               "as-groups",
                                               "as-user-extra",
                                               "username",
                                               "password",
                                               "auth-provider",
                                               "exec",
                                               "extensions"};
  for (const auto& [key, value] : user.items()) {
    if (!kKnown.contains(key)) {
      return r.Error(absl::StrCat(path, ".", key),
                     "unknown field; gpulet refuses user fields it does not "
                     "know rather than connect as someone else");
    }
  }
  return absl::OkStatus();
}

absl::Status ReadCluster(const Doc& doc, const Json& cluster,
                         const std::string& path, KubeconfigSelection& out) {
  const Reader& r = doc.reader;
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
  out.ca_file = Resolve(doc.base_dir, out.ca_file);
  GPULET_ASSIGN_OR_RETURN(out.config.ca_pem,
                          r.Data(cluster, path, "certificate-authority-data"));
  return absl::OkStatus();
}

absl::Status ReadUser(const Doc& doc, const Json& user, const std::string& path,
                      KubeconfigSelection& out) {
  const Reader& r = doc.reader;
  ApiServerConfig& c = out.config;
  GPULET_RETURN_IF_ERROR(RejectPresent(
      r, user, path, {"auth-provider", "username", "password"},
      "not supported by gpulet (use a client certificate or a token)"));
  GPULET_RETURN_IF_ERROR(RejectUnknownUserFields(r, user, path));
  GPULET_ASSIGN_OR_RETURN(c.client_cert_file,
                          r.String(user, path, "client-certificate"));
  GPULET_ASSIGN_OR_RETURN(c.client_cert_pem,
                          r.Data(user, path, "client-certificate-data"));
  GPULET_ASSIGN_OR_RETURN(c.client_key_file,
                          r.String(user, path, "client-key"));
  GPULET_ASSIGN_OR_RETURN(c.client_key_pem,
                          r.Data(user, path, "client-key-data"));
  GPULET_ASSIGN_OR_RETURN(c.token, r.String(user, path, "token"));
  GPULET_ASSIGN_OR_RETURN(c.token_file, r.String(user, path, "tokenFile"));
  GPULET_ASSIGN_OR_RETURN(c.impersonation,
                          ReadImpersonation(user, r.source(), path));
  const bool has_cert =
      !c.client_cert_file.empty() || !c.client_cert_pem.empty();
  const bool has_key = !c.client_key_file.empty() || !c.client_key_pem.empty();
  if (has_cert != has_key) {
    return r.Error(path, "client-certificate and client-key go together");
  }
  // -data wins over a file, as in kubectl; only files are re-read.
  if (!c.client_cert_pem.empty()) c.client_cert_file.clear();
  if (!c.client_key_pem.empty()) c.client_key_file.clear();
  c.client_cert_file = Resolve(doc.base_dir, c.client_cert_file);
  c.client_key_file = Resolve(doc.base_dir, c.client_key_file);
  c.token_file = Resolve(doc.base_dir, c.token_file);
  return absl::OkStatus();
}

// The context's name: `context`, else the first current-context set.
absl::StatusOr<std::string> ContextName(const std::vector<Doc>& docs,
                                        const std::string& sources,
                                        const std::string& context) {
  if (!context.empty()) return context;
  for (const Doc& doc : docs) {
    GPULET_ASSIGN_OR_RETURN(std::string name,
                            doc.reader.String(doc.root, "", "current-context"));
    if (!name.empty()) return name;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      sources, ": current-context: missing, and no context was given"));
}

absl::StatusOr<KubeconfigSelection> Select(const std::vector<Doc>& docs,
                                           const std::string& sources,
                                           const std::string& context) {
  GPULET_ASSIGN_OR_RETURN(std::string name,
                          ContextName(docs, sources, context));
  KubeconfigSelection out;
  out.config.source = absl::StrCat("kubeconfig ", sources);
  GPULET_ASSIGN_OR_RETURN(
      Found ctx,
      FindFirst(docs, "contexts", "context", name,
                absl::StrCat(sources, ": ",
                             context.empty() ? "current-context" : "context")));
  const Reader& r = ctx.doc->reader;
  GPULET_ASSIGN_OR_RETURN(std::string cluster_name,
                          r.String(ctx.item, ctx.path, "cluster"));
  GPULET_ASSIGN_OR_RETURN(std::string user_name,
                          r.String(ctx.item, ctx.path, "user"));
  GPULET_ASSIGN_OR_RETURN(out.config.namespace_name,
                          r.String(ctx.item, ctx.path, "namespace"));
  if (out.config.namespace_name.empty()) out.config.namespace_name = "default";
  const std::string wanted_by = absl::StrCat(r.source(), ": ", ctx.path);
  GPULET_ASSIGN_OR_RETURN(Found cluster,
                          FindFirst(docs, "clusters", "cluster", cluster_name,
                                    wanted_by + ".cluster"));
  GPULET_RETURN_IF_ERROR(
      ReadCluster(*cluster.doc, cluster.item, cluster.path, out));
  if (!user_name.empty()) {
    GPULET_ASSIGN_OR_RETURN(
        Found user,
        FindFirst(docs, "users", "user", user_name, wanted_by + ".user"));
    GPULET_RETURN_IF_ERROR(ReadUser(*user.doc, user.item, user.path, out));
    GPULET_ASSIGN_OR_RETURN(
        out.config.exec,
        ReadUserExec(user.item, user.path, cluster.item, cluster.path,
                     user.doc->reader.source(), user_name));
    if (out.config.exec) out.config.exec->base_dir = user.doc->base_dir;
  }
  return out;
}

absl::StatusOr<Doc> Parse(absl::string_view text, const std::string& source,
                          std::string base_dir) {
  GPULET_ASSIGN_OR_RETURN(Json root, YamlToJson(text, source));
  Reader r(source);
  if (!root.is_object() && !root.is_null()) {
    return r.Error("(top level)", "expected a map");
  }
  if (root.is_null()) root = Json::object();  // an empty file
  return Doc{std::move(root), std::move(r), std::move(base_dir)};
}

absl::StatusOr<std::string> ReadPem(const std::string& file,
                                    const std::string& source,
                                    absl::string_view field) {
  absl::StatusOr<std::string> text = common::ReadFile(file);
  if (!text.ok()) {
    return common::Annotate(text.status(), absl::StrCat(source, ": ", field));
  }
  return text;
}

// Reads the certificate files a selection names into its config.
absl::StatusOr<ApiServerConfig> ReadFiles(KubeconfigSelection sel) {
  ApiServerConfig& c = sel.config;
  if (!sel.ca_file.empty() && c.ca_pem.empty()) {
    GPULET_ASSIGN_OR_RETURN(
        c.ca_pem, ReadPem(sel.ca_file, c.source, "certificate-authority"));
  }
  if (!c.client_cert_file.empty()) {
    GPULET_ASSIGN_OR_RETURN(
        c.client_cert_pem,
        ReadPem(c.client_cert_file, c.source, "client-certificate"));
  }
  if (!c.client_key_file.empty()) {
    GPULET_ASSIGN_OR_RETURN(c.client_key_pem,
                            ReadPem(c.client_key_file, c.source, "client-key"));
  }
  return std::move(sel.config);
}

std::string DirOf(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return dir.empty() ? "." : dir.string();
}

}  // namespace

absl::StatusOr<KubeconfigSelection> ParseKubeconfig(
    absl::string_view text, const std::string& source,
    const std::string& context) {
  std::vector<Doc> docs;
  GPULET_ASSIGN_OR_RETURN(Doc doc, Parse(text, source, ""));
  docs.push_back(std::move(doc));
  return Select(docs, source, context);
}

absl::StatusOr<KubeconfigSelection> SelectKubeconfig(
    const std::vector<KubeconfigText>& files, const std::string& context) {
  std::vector<Doc> docs;
  std::vector<std::string> paths;
  for (const KubeconfigText& file : files) {
    GPULET_ASSIGN_OR_RETURN(Doc doc,
                            Parse(file.text, file.path, DirOf(file.path)));
    docs.push_back(std::move(doc));
    paths.push_back(file.path);
  }
  return Select(docs, absl::StrJoin(paths, ":"), context);
}

absl::StatusOr<ApiServerConfig> LoadKubeconfig(const std::string& path,
                                               const std::string& context) {
  GPULET_ASSIGN_OR_RETURN(std::string text, common::ReadFile(path));
  GPULET_ASSIGN_OR_RETURN(KubeconfigSelection sel,
                          SelectKubeconfig({{path, std::move(text)}}, context));
  return ReadFiles(std::move(sel));
}

absl::StatusOr<ApiServerConfig> LoadKubeconfigList(absl::string_view list,
                                                   const std::string& context) {
  std::vector<KubeconfigText> files;
  std::set<std::string> seen;
  for (absl::string_view piece : absl::StrSplit(list, ':', absl::SkipEmpty())) {
    std::string path(piece);
    if (!seen.insert(path).second) continue;
    absl::StatusOr<std::string> text = common::ReadFile(path);
    if (absl::IsNotFound(text.status())) continue;  // kubectl skips it too
    if (!text.ok()) {
      return common::Annotate(text.status(), absl::StrCat("KUBECONFIG ", list));
    }
    files.push_back({std::move(path), *std::move(text)});
  }
  if (files.empty()) {
    return absl::NotFoundError(
        absl::StrCat("KUBECONFIG \"", list, "\": none of its files exists"));
  }
  GPULET_ASSIGN_OR_RETURN(KubeconfigSelection sel,
                          SelectKubeconfig(files, context));
  return ReadFiles(std::move(sel));
}

}  // namespace gpulet::config
