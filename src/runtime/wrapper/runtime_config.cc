#include "src/runtime/wrapper/runtime_config.h"

#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/file_util.h"
#include "src/base/yaml/nesting_depth.h"
#include "yaml-cpp/yaml.h"

namespace gpulet::config {
namespace {

// The file is a flat mapping with one list; yaml-cpp recurses once per
// level, so anything deeper is refused before it parses.
constexpr int kMaxNesting = 16;
constexpr size_t kMaxRuntimeConfigBytes = size_t{1} << 20;

std::string Where(const std::string& source, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return source;
  return absl::StrCat(source, ":", mark.line + 1, ":", mark.column + 1);
}

absl::Status KeyError(const std::string& source, const YAML::Node& node,
                      const std::string& key, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(Where(source, node), ": ", key, ": ", what));
}

absl::Status ReadString(const std::string& source, const YAML::Node& value,
                        const std::string& key, std::string& out) {
  if (!value.IsScalar()) {
    return KeyError(source, value, key, "must be a string");
  }
  out = value.Scalar();
  return absl::OkStatus();
}

absl::Status ReadNonEmpty(const std::string& source, const YAML::Node& value,
                          const std::string& key, std::string& out) {
  if (absl::Status s = ReadString(source, value, key, out); !s.ok()) return s;
  if (out.empty()) return KeyError(source, value, key, "must not be empty");
  return absl::OkStatus();
}

absl::Status ReadBool(const std::string& source, const YAML::Node& value,
                      const std::string& key, bool& out) {
  if (value.IsScalar()) {
    const std::string& s = value.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") {
      out = true;
      return absl::OkStatus();
    }
    if (s == "false" || s == "False" || s == "FALSE") {
      out = false;
      return absl::OkStatus();
    }
  }
  return KeyError(source, value, key, "must be true or false");
}

absl::Status ReadDirs(const std::string& source, const YAML::Node& value,
                      std::vector<std::string>& out) {
  if (!value.IsSequence()) {
    return KeyError(source, value, "specDirs", "must be a list of paths");
  }
  out.clear();
  for (size_t i = 0; i < value.size(); ++i) {
    std::string dir;
    const std::string key = absl::StrCat("specDirs[", i, "]");
    if (absl::Status s = ReadNonEmpty(source, value[i], key, dir); !s.ok()) {
      return s;
    }
    out.push_back(dir);
  }
  return absl::OkStatus();
}

absl::Status ReadKey(const std::string& source, const std::string& key,
                     const YAML::Node& value, RuntimeConfig& config) {
  if (key == "runtime") return ReadNonEmpty(source, value, key, config.runtime);
  if (key == "driverRoot") {
    return ReadNonEmpty(source, value, key, config.driver_root);
  }
  if (key == "specDirs") return ReadDirs(source, value, config.spec_dirs);
  if (key == "acceptEnvvarUnprivileged") {
    return ReadBool(source, value, key, config.accept_envvar_unprivileged);
  }
  if (key == "vendor") return ReadNonEmpty(source, value, key, config.vendor);
  if (key == "class") {
    return ReadNonEmpty(source, value, key, config.device_class);
  }
  if (key == "logFile") return ReadString(source, value, key, config.log_file);
  return KeyError(source, value, key,
                  "unknown key (known: runtime, driverRoot, specDirs, "
                  "acceptEnvvarUnprivileged, vendor, class, logFile)");
}

absl::StatusOr<RuntimeConfig> ParseRoot(const YAML::Node& root,
                                        const std::string& source) {
  RuntimeConfig config;
  if (!root.IsDefined() || root.IsNull()) return config;
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(source, root), ": the document must be a mapping"));
  }
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) {
      return KeyError(source, entry.first, "<key>", "must be a string");
    }
    const std::string key = entry.first.Scalar();
    if (absl::Status s = ReadKey(source, key, entry.second, config); !s.ok()) {
      return s;
    }
  }
  return config;
}

}  // namespace

absl::StatusOr<RuntimeConfig> ParseRuntimeConfig(absl::string_view text,
                                                 const std::string& source) {
  if (absl::Status s = yaml::CheckNestingDepth(text, kMaxNesting, source);
      !s.ok()) {
    return s;
  }
  // yaml-cpp reports errors by throwing; none may leave the config layer.
  try {
    return ParseRoot(YAML::Load(std::string(text)), source);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.what()));
  }
}

absl::StatusOr<RuntimeConfig> LoadRuntimeConfig(const std::string& path,
                                                bool missing_ok) {
  absl::StatusOr<std::string> text =
      common::ReadFile(path, kMaxRuntimeConfigBytes);
  if (!text.ok()) {
    if (missing_ok && absl::IsNotFound(text.status())) return RuntimeConfig{};
    return text.status();
  }
  return ParseRuntimeConfig(*text, path);
}

}  // namespace gpulet::config
