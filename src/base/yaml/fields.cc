#include "src/base/yaml/fields.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpulet::yaml {
namespace {

// Levenshtein distance ignoring case; keys are short.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      bool same = absl::ascii_tolower(static_cast<unsigned char>(a[i - 1])) ==
                  absl::ascii_tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] =
          std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string JoinPath(absl::string_view parent, absl::string_view key) {
  if (parent.empty()) return std::string(key);
  return absl::StrCat(parent, ".", key);
}

std::string IndexPath(absl::string_view parent, size_t index) {
  return absl::StrCat(parent, "[", index, "]");
}

std::string Quote(absl::string_view s) {
  constexpr size_t kMax = 60;
  if (s.size() > kMax) {
    return absl::StrCat("\"", absl::CHexEscape(s.substr(0, kMax)), "...\"");
  }
  return absl::StrCat("\"", absl::CHexEscape(s), "\"");
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing (null)";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      return Quote(node.Scalar());
    default:
      return "nothing";
  }
}

std::string UnknownKey(const std::string& name,
                       const std::vector<std::string>& allowed) {
  std::string message = absl::StrCat("unknown key ", Quote(name));
  const std::string* best = nullptr;
  size_t best_distance = 3;  // suggest near misses only
  if (name.size() <= 64) {
    for (const std::string& key : allowed) {
      size_t distance = EditDistance(name, key);
      if (distance < best_distance) {
        best = &key;
        best_distance = distance;
      }
    }
  }
  if (best != nullptr) {
    return absl::StrCat(message, " (did you mean \"", *best, "\"?)");
  }
  return absl::StrCat(message, " (known keys: ", absl::StrJoin(allowed, ", "),
                      ")");
}

}  // namespace gpulet::yaml
