#include "src/runtime/wrapper/oci_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <exception>

#include "absl/strings/str_cat.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"

namespace gpulet::runtime {
namespace {

using nlohmann::json;

absl::Status FieldError(const std::string& source, absl::string_view field,
                        absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": ", field, ": ", what));
}

absl::Status CheckRequiredFields(const json& config,
                                 const std::string& source) {
  if (!config.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": the document must be a JSON object"));
  }
  auto root = config.find("root");
  if (root == config.end()) return FieldError(source, "root", "missing");
  if (!root->is_object()) return FieldError(source, "root", "not an object");
  auto root_path = root->find("path");
  if (root_path == root->end() || !root_path->is_string() ||
      root_path->get_ref<const std::string&>().empty()) {
    return FieldError(source, "root.path", "missing or not a string");
  }
  auto process = config.find("process");
  if (process == config.end()) return FieldError(source, "process", "missing");
  if (!process->is_object()) {
    return FieldError(source, "process", "not an object");
  }
  auto env = process->find("env");
  if (env != process->end() && !env->is_null()) {
    if (!env->is_array())
      return FieldError(source, "process.env", "not a list");
    for (size_t i = 0; i < env->size(); ++i) {
      if (!(*env)[i].is_string()) {
        return FieldError(source, absl::StrCat("process.env[", i, "]"),
                          "not a string");
      }
    }
  }
  return absl::OkStatus();
}

const json& Process(const json& config) {
  static const json kEmpty = json::object();
  auto it = config.find("process");
  return it != config.end() && it->is_object() ? *it : kEmpty;
}

std::string_view EnvKey(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

}  // namespace

absl::StatusOr<json> ParseOciConfig(absl::string_view text,
                                    const std::string& source) {
  json config;
  // nlohmann reports syntax errors by exception; none leaves this module.
  try {
    config = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": invalid JSON at byte ", e.byte, ": ", e.what()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.what()));
  }
  if (absl::Status s = CheckRequiredFields(config, source); !s.ok()) return s;
  return config;
}

std::string SerializeOciConfig(const json& config) {
  // Replacing invalid UTF-8 keeps dump() from throwing on strings that
  // came in as valid JSON escapes of lone surrogates.
  return config.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<std::string> GetProcessEnv(const json& config,
                                         const std::string& key) {
  const json& process = Process(config);
  auto env = process.find("env");
  if (env == process.end() || !env->is_array()) return std::nullopt;
  std::optional<std::string> value;
  for (const json& entry : *env) {
    if (!entry.is_string()) continue;
    const std::string& s = entry.get_ref<const std::string&>();
    if (EnvKey(s) != key) continue;
    size_t eq = s.find('=');
    value = eq == std::string::npos ? std::string() : s.substr(eq + 1);
  }
  return value;
}

void SetProcessEnv(json& config, const std::string& entry) {
  json& process = config["process"];
  if (!process.contains("env") || !process["env"].is_array()) {
    process["env"] = json::array();
  }
  json& env = process["env"];
  const std::string_view key = EnvKey(entry);
  json updated = json::array();
  bool placed = false;
  for (json& existing : env) {
    if (existing.is_string() &&
        EnvKey(existing.get_ref<const std::string&>()) == key) {
      if (!placed) updated.push_back(entry);
      placed = true;
      continue;
    }
    updated.push_back(std::move(existing));
  }
  if (!placed) updated.push_back(entry);
  env = std::move(updated);
}

bool IsPrivileged(const json& config) {
  const json& process = Process(config);
  auto caps = process.find("capabilities");
  if (caps == process.end() || !caps->is_object()) return false;
  auto bounding = caps->find("bounding");
  if (bounding == caps->end() || !bounding->is_array()) return false;
  for (const json& cap : *bounding) {
    if (cap.is_string() &&
        cap.get_ref<const std::string&>() == "CAP_SYS_ADMIN") {
      return true;
    }
  }
  return false;
}

absl::Status ReplaceFile(const std::string& path, absl::string_view contents) {
  common::WriteOptions options;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) options.mode = st.st_mode & 07777;
  // The bundle lives only as long as the container being created: runc
  // reads config.json at once, and a machine crash ends the container
  // anyway, so syncing would only slow every container start.
  options.durable = false;
  return common::WriteFileAtomic(path, contents, options);
}

}  // namespace gpulet::runtime
