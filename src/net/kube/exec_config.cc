#include "src/net/kube/exec_config.h"

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/status_macros.h"

namespace gpulet::config {
namespace {

using Json = nlohmann::ordered_json;

class Fields {
 public:
  Fields(const Json& obj, const std::string& source, const std::string& path)
      : obj_(obj), source_(source), path_(path) {}

  absl::Status Error(absl::string_view key, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        source_, ": ", path_, key.empty() ? "" : ".", key, ": ", what));
  }

  // nullptr when absent or null.
  const Json* Find(const char* key) const {
    auto it = obj_.find(key);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }

  absl::StatusOr<std::string> String(const char* key) const {
    const Json* v = Find(key);
    if (v == nullptr) return std::string();
    if (!v->is_string()) return Error(key, "expected a string");
    return v->get<std::string>();
  }

 private:
  const Json& obj_;
  const std::string& source_;
  const std::string& path_;
};

absl::StatusOr<InteractiveMode> ReadInteractiveMode(const Fields& f,
                                                    const std::string& api) {
  GPULET_ASSIGN_OR_RETURN(std::string mode, f.String("interactiveMode"));
  if (mode.empty() && api == kExecApiV1) {
    return f.Error("interactiveMode",
                   absl::StrCat("required with ", kExecApiV1,
                                " (Never, IfAvailable or Always)"));
  }
  if (mode.empty() || mode == "IfAvailable") {
    return InteractiveMode::kIfAvailable;
  }
  if (mode == "Never") return InteractiveMode::kNever;
  if (mode == "Always") return InteractiveMode::kAlways;
  return f.Error(
      "interactiveMode",
      absl::StrCat("\"", mode, "\" is not one of Never, IfAvailable, Always"));
}

// The list at `key`, nullptr when absent; an error when not a list.
absl::StatusOr<const Json*> List(const Fields& f, const char* key) {
  const Json* list = f.Find(key);
  if (list != nullptr && !list->is_array()) {
    return f.Error(key, "expected a list");
  }
  return list;
}

absl::Status ReadArgs(const Fields& f, ExecConfig& out) {
  GPULET_ASSIGN_OR_RETURN(const Json* list, List(f, "args"));
  for (size_t i = 0; list != nullptr && i < list->size(); ++i) {
    if (!(*list)[i].is_string()) {
      return f.Error(absl::StrCat("args[", i, "]"), "expected a string");
    }
    out.args.push_back((*list)[i].get<std::string>());
  }
  return absl::OkStatus();
}

absl::Status ReadEnv(const Fields& f, ExecConfig& out) {
  GPULET_ASSIGN_OR_RETURN(const Json* list, List(f, "env"));
  for (size_t i = 0; list != nullptr && i < list->size(); ++i) {
    const Json& item = (*list)[i];
    const std::string at = absl::StrCat("env[", i, "]");
    const Json name = item.is_object() ? item.value("name", Json()) : Json();
    const Json value = item.is_object() ? item.value("value", Json()) : Json();
    if (!name.is_string() || name.get_ref<const std::string&>().empty() ||
        !value.is_string()) {
      return f.Error(at,
                     "expected {name: <non-empty string>, value: <string>}");
    }
    if (name.get_ref<const std::string&>().find('=') != std::string::npos) {
      return f.Error(at, "an environment variable's name has no '='");
    }
    out.env.emplace_back(name.get<std::string>(), value.get<std::string>());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ExecConfig> ParseExecConfig(const Json& exec,
                                           const std::string& source,
                                           const std::string& path,
                                           const std::string& user) {
  const Fields f(exec, source, path);
  if (!exec.is_object()) return f.Error("", "expected a map");
  ExecConfig out;
  out.user = user;
  GPULET_ASSIGN_OR_RETURN(out.api_version, f.String("apiVersion"));
  if (out.api_version != kExecApiV1 && out.api_version != kExecApiV1beta1) {
    return f.Error(
        "apiVersion",
        out.api_version.empty()
            ? absl::StrCat("missing (", kExecApiV1, " or ", kExecApiV1beta1,
                           ")")
            : absl::StrCat("\"", out.api_version, "\" is not supported (",
                           kExecApiV1, " or ", kExecApiV1beta1, ")"));
  }
  GPULET_ASSIGN_OR_RETURN(out.command, f.String("command"));
  if (out.command.empty()) return f.Error("command", "missing");
  GPULET_RETURN_IF_ERROR(ReadArgs(f, out));
  GPULET_RETURN_IF_ERROR(ReadEnv(f, out));
  GPULET_ASSIGN_OR_RETURN(out.install_hint, f.String("installHint"));
  if (const Json* info = f.Find("provideClusterInfo"); info != nullptr) {
    if (!info->is_boolean()) {
      return f.Error("provideClusterInfo", "expected true or false");
    }
    out.provide_cluster_info = info->get<bool>();
  }
  GPULET_ASSIGN_OR_RETURN(out.interactive_mode,
                          ReadInteractiveMode(f, out.api_version));
  return out;
}

absl::StatusOr<std::optional<ExecConfig>> ReadUserExec(
    const Json& user_json, const std::string& user_path,
    const Json& cluster_json, const std::string& cluster_path,
    const std::string& source, const std::string& user) {
  const Fields u(user_json, source, user_path);
  const Json* exec = u.Find("exec");
  if (exec == nullptr) return std::nullopt;
  for (const char* other :
       {"token", "tokenFile", "client-certificate", "client-certificate-data",
        "client-key", "client-key-data"}) {
    if (u.Find(other) != nullptr) {
      return u.Error("exec", absl::StrCat("not together with ", other,
                                          " (one way to authenticate)"));
    }
  }
  GPULET_ASSIGN_OR_RETURN(
      ExecConfig out,
      ParseExecConfig(*exec, source, absl::StrCat(user_path, ".exec"), user));
  const Fields c(cluster_json, source, cluster_path);
  GPULET_ASSIGN_OR_RETURN(const Json* list, List(c, "extensions"));
  if (list == nullptr) return out;
  for (const Json& item : *list) {
    if (!item.is_object() ||
        item.value("name", Json()) != kExecClusterExtension) {
      continue;
    }
    auto ext = item.find("extension");
    if (ext != item.end() && !ext->is_null()) {
      out.cluster_config_json = ext->dump();
    }
  }
  return out;
}

}  // namespace gpulet::config
