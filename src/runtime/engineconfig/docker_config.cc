// Docker: daemon.json's "runtimes" map; CDI is the "cdi" feature (Docker
// 25+), whose spec dirs default to /etc/cdi and /var/run/cdi.
#include <cstddef>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/runtime/engineconfig/configure.h"

namespace gpulet::engineconfig {
namespace {

using Json = nlohmann::ordered_json;

std::string LineColumn(const std::string& text, size_t byte) {
  size_t line = 1;
  size_t column = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return absl::StrCat(line, ":", column);
}

// The indentation the file uses (that of its first indented line), else
// four spaces.
std::pair<int, char> IndentOf(const std::string& text) {
  size_t nl = text.find('\n');
  while (nl != std::string::npos && nl + 1 < text.size()) {
    size_t start = nl + 1;
    size_t end = text.find_first_not_of(" \t", start);
    if (end != std::string::npos && end > start && text[end] != '\n') {
      return {static_cast<int>(end - start), text[start]};
    }
    nl = text.find('\n', start);
  }
  return {4, ' '};
}

// The object at `key` of `parent`, created when missing.
absl::StatusOr<Json*> Object(Json& parent, const std::string& key,
                             const std::string& file_name,
                             const std::string& where) {
  Json& child = parent[key];
  if (child.is_null()) child = Json::object();
  if (!child.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        file_name, ": ", where, " must be an object, not ", child.type_name()));
  }
  return &child;
}

}  // namespace

absl::StatusOr<std::string> ConfigureDocker(std::string text,
                                            const std::string& file_name,
                                            const RuntimeOptions& o) {
  Json root;
  bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
  if (blank) {
    root = Json::object();
  } else {
    try {
      root = Json::parse(text);
    } catch (const Json::parse_error& e) {
      std::string what = e.what();
      size_t colon = what.find(": ");
      return absl::InvalidArgumentError(absl::StrCat(
          file_name, ":", LineColumn(text, e.byte == 0 ? 0 : e.byte - 1),
          ": invalid JSON: ",
          colon == std::string::npos ? what : what.substr(colon + 2)));
    }
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file_name, ": the top level must be an object, not ",
                     root.type_name()));
  }
  const Json before = root;
  auto runtimes = Object(root, "runtimes", file_name, "\"runtimes\"");
  if (!runtimes.ok()) return runtimes.status();
  auto runtime = Object(**runtimes, o.name, file_name,
                        absl::StrCat("\"runtimes\".\"", o.name, "\""));
  if (!runtime.ok()) return runtime.status();
  (**runtime)["path"] = o.path;
  if (o.set_as_default) root["default-runtime"] = o.name;
  if (o.enable_cdi) {
    auto features = Object(root, "features", file_name, "\"features\"");
    if (!features.ok()) return features.status();
    (**features)["cdi"] = true;
  }
  if (root == before) return text;
  auto [width, fill] = IndentOf(text);
  return root.dump(width, fill) + "\n";
}

}  // namespace gpulet::engineconfig
