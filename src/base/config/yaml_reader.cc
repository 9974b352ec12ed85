#include "src/base/config/yaml_reader.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace gpulet::config::internal {
namespace {

constexpr int64_t kIntLimit = 1000000000;

Origin OriginOf(const std::string& source, const YAML::Node& node) {
  Origin origin{source, 0, 0};
  YAML::Mark mark = node.Mark();
  if (!mark.is_null()) {
    origin.line = mark.line + 1;
    origin.column = mark.column + 1;
  }
  return origin;
}

}  // namespace

void YamlReader::Record(const Field& field) {
  (*origins_)[field.path] = OriginOf(source_, field.node);
}

absl::Status YamlReader::Error(const Field& field,
                               absl::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(
      OriginOf(source_, field.node).ToString(), ": ", field.path, ": ", what));
}

absl::StatusOr<std::vector<Field>> YamlReader::Map(
    const Field& field, const std::vector<std::string>& allowed) const {
  std::vector<Field> entries;
  if (field.node.IsNull()) return entries;
  if (!field.node.IsMap()) {
    return Error(field, absl::StrCat("expected a map, got ",
                                     yaml::Describe(field.node)));
  }
  for (auto it = field.node.begin(); it != field.node.end(); ++it) {
    // The iterator hands out a temporary pair: copy the nodes, never bind.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      return Error(
          Field{key, field.path},
          absl::StrCat("map keys must be strings, got ", yaml::Describe(key)));
    }
    auto match = std::find_if(
        allowed.begin(), allowed.end(), [&](const std::string& name) {
          return absl::EqualsIgnoreCase(name, key.Scalar());
        });
    if (match == allowed.end()) {
      return Error(Field{key, JoinPath(field.path, key.Scalar())},
                   yaml::UnknownKey(key.Scalar(), allowed));
    }
    std::string path = JoinPath(field.path, *match);
    for (const Field& seen : entries) {
      if (seen.path == path) {
        return Error(Field{key, path}, "duplicate key");
      }
    }
    entries.push_back(Field{value, path});
  }
  // Null entries stay until here so that a duplicate of one is caught.
  std::erase_if(entries, [](const Field& f) { return f.node.IsNull(); });
  return entries;
}

absl::StatusOr<std::vector<Field>> YamlReader::List(const Field& field,
                                                    size_t max_items) const {
  std::vector<Field> items;
  if (field.node.IsNull()) return items;
  if (!field.node.IsSequence()) {
    return Error(field, absl::StrCat("expected a list, got ",
                                     yaml::Describe(field.node)));
  }
  if (field.node.size() > max_items) {
    return Error(field,
                 absl::StrCat("has ", field.node.size(), " items; at most ",
                              max_items, " allowed"));
  }
  for (size_t i = 0; i < field.node.size(); ++i) {
    items.push_back(Field{field.node[i], IndexPath(field.path, i)});
  }
  return items;
}

absl::StatusOr<std::string> YamlReader::String(const Field& field,
                                               size_t max_len) const {
  if (!field.node.IsScalar()) {
    return Error(field, absl::StrCat("expected a string, got ",
                                     yaml::Describe(field.node)));
  }
  const std::string& s = field.node.Scalar();
  if (s.size() > max_len) {
    return Error(field,
                 absl::StrCat("is ", s.size(), " characters long; at most ",
                              max_len, " allowed"));
  }
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Error(field, "contains a control character");
    }
  }
  return s;
}

absl::StatusOr<bool> YamlReader::Bool(const Field& field) const {
  if (field.node.IsScalar()) {
    std::string s = absl::AsciiStrToLower(field.node.Scalar());
    if (s == "true" || s == "yes" || s == "on" || s == "y") return true;
    if (s == "false" || s == "no" || s == "off" || s == "n") return false;
  }
  return Error(field, absl::StrCat("expected true or false, got ",
                                   yaml::Describe(field.node)));
}

absl::StatusOr<int64_t> YamlReader::Int(const Field& field) const {
  if (field.node.IsScalar()) {
    absl::string_view s = field.node.Scalar();
    bool negative = absl::ConsumePrefix(&s, "-");
    if (!negative) absl::ConsumePrefix(&s, "+");
    int64_t value = 0;
    bool ok = !s.empty() && s.size() <= 10;
    for (char c : s) {
      ok = ok && absl::ascii_isdigit(static_cast<unsigned char>(c));
      if (ok) value = value * 10 + (c - '0');
    }
    if (ok && value <= kIntLimit) return negative ? -value : value;
  }
  return Error(field, absl::StrCat("expected an integer, got ",
                                   yaml::Describe(field.node)));
}

absl::StatusOr<size_t> YamlReader::MatchName(
    const Field& field, const std::vector<std::string>& names) const {
  if (field.node.IsScalar()) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == field.node.Scalar()) return i;
    }
    return Error(field, UnknownValue(field.node.Scalar(), names));
  }
  return Error(field,
               absl::StrCat("expected one of ", absl::StrJoin(names, ", "),
                            ", got ", yaml::Describe(field.node)));
}

}  // namespace gpulet::config::internal
