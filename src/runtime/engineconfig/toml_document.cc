#include "src/runtime/engineconfig/toml_document.h"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <map>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/common/status_macros.h"
#include "src/runtime/engineconfig/toml_layout.h"

namespace gpulet::engineconfig {
namespace {

// The first line of toml11's message without its "[error] toml::fn: "
// prefix, plus the hint under the offending text.
std::string Reason(const std::string& what) {
  std::string first = what.substr(0, what.find('\n'));
  for (std::string_view prefix : {"[error] ", "toml::"}) {
    if (first.rfind(prefix, 0) == 0) first.erase(0, prefix.size());
  }
  if (size_t colon = first.find(": ");
      colon != std::string::npos && first.find(' ') > colon) {
    first.erase(0, colon + 2);
  }
  // The mark under the text is "^---" or a run of "~", then the hint.
  size_t hint = what.find("^--- ");
  if (hint != std::string::npos) {
    hint += 5;
  } else if ((hint = what.find("~ ")) != std::string::npos) {
    hint += 2;
  }
  if (hint != std::string::npos) {
    std::string text = what.substr(hint, what.find('\n', hint) - hint);
    if (!text.empty()) absl::StrAppend(&first, " (", text, ")");
  }
  return first;
}

absl::Status ParseToml(const std::string& text, const std::string& name,
                       TomlValue& out) {
  try {
    std::istringstream in(text);
    out = toml::parse<toml::discard_comments, std::map, std::vector>(in, name);
    return absl::OkStatus();
  } catch (const toml::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ":", e.location().line(), ": invalid TOML: ", Reason(e.what())));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": invalid TOML: ", e.what()));
  }
}

// One TOML value written as text.
absl::StatusOr<TomlValue> ParseValue(const std::string& value_text) {
  TomlValue snippet;
  GPULET_RETURN_IF_ERROR(
      ParseToml(absl::StrCat("v = ", value_text, "\n"), "value", snippet));
  return TomlValue(snippet.as_table().at("v"));
}

// The table at `path` under `root`, made (empty) where missing.
// REQUIRES: nothing on the way is a value other than a table.
TomlValue::table_type& TableIn(TomlValue& root, const KeyPath& path) {
  TomlValue* cur = &root;
  for (const std::string& k : path) {
    auto& tab = cur->as_table();
    auto it = tab.find(k);
    if (it == tab.end()) {
      it = tab.emplace(k, TomlValue(TomlValue::table_type{})).first;
    }
    cur = &it->second;
  }
  return cur->as_table();
}

// Equal by meaning: strings by content whatever their quoting.
bool SameValue(const TomlValue& a, const TomlValue& b) {
  if (a.is_string() && b.is_string()) {
    return a.as_string().str == b.as_string().str;
  }
  if (a.is_array() && b.is_array()) {
    const auto& x = a.as_array();
    const auto& y = b.as_array();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!SameValue(x[i], y[i])) return false;
    }
    return true;
  }
  return a == b;
}

bool IsBareKey(std::string_view key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

std::string BasicString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          static constexpr char kHex[] = "0123456789ABCDEF";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xf];
          out += kHex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string QuoteIn(std::string_view s, bool literal) {
  bool plain = std::none_of(s.begin(), s.end(), [](char c) {
    return c == '\'' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (literal && plain) return "'" + std::string(s) + "'";
  return BasicString(s);
}

std::string FormatKey(std::string_view key, bool literal) {
  return IsBareKey(key) ? std::string(key) : QuoteIn(key, literal);
}

std::string FormatPath(const KeyPath& path, bool literal) {
  std::vector<std::string> keys;
  for (const std::string& k : path) keys.push_back(FormatKey(k, literal));
  return absl::StrJoin(keys, ".");
}

}  // namespace

KeyPath Join(KeyPath path, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys) path.emplace_back(k);
  return path;
}

std::string FormatKeyPath(const KeyPath& path) {
  return FormatPath(path, false);
}

struct TomlDocument::Impl {
  std::string text;
  std::string name;
  TomlValue root;
  TomlLayout layout;
  bool literal = false;

  absl::Status Reindex() {
    layout = TomlLayout::Build(text, root);
    literal = layout.literal_strings > layout.basic_strings;
    return absl::OkStatus();
  }
  std::string Where(const KeyPath& path) const {
    int line = layout.LineOf(root, path);
    return line > 0 ? absl::StrCat(name, ":", line) : name;
  }
  absl::StatusOr<std::string> Edited(const KeyPath& table,
                                     const std::string& key,
                                     const std::string& value_text) const;
  absl::Status CheckExtensible(const KeyPath& table) const;

  // Takes `edited` as the text when it parses to exactly `expected`.
  absl::Status Commit(std::string edited, const TomlValue& expected,
                      const KeyPath& what) {
    TomlValue reparsed;
    absl::Status parsed = ParseToml(edited, name, reparsed);
    if (!parsed.ok() || !(reparsed == expected)) {
      return absl::InternalError(absl::StrCat(
          name, ": setting ", FormatKeyPath(what),
          " would not give the intended file; nothing was changed",
          parsed.ok() ? "" : absl::StrCat(" (", parsed.message(), ")")));
    }
    text = std::move(edited);
    root = std::move(reparsed);
    return Reindex();
  }
};

TomlDocument::TomlDocument(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
TomlDocument::TomlDocument(TomlDocument&&) noexcept = default;
TomlDocument& TomlDocument::operator=(TomlDocument&&) noexcept = default;
TomlDocument::~TomlDocument() = default;

absl::StatusOr<TomlDocument> TomlDocument::Parse(std::string text,
                                                 std::string name) {
  auto impl = std::make_unique<Impl>();
  impl->text = std::move(text);
  impl->name = std::move(name);
  GPULET_RETURN_IF_ERROR(ParseToml(impl->text, impl->name, impl->root));
  GPULET_RETURN_IF_ERROR(impl->Reindex());
  return TomlDocument(std::move(impl));
}

const std::string& TomlDocument::text() const { return impl_->text; }
const std::string& TomlDocument::name() const { return impl_->name; }
bool TomlDocument::Empty() const { return impl_->root.as_table().empty(); }

TomlKind TomlDocument::KindAt(const KeyPath& path) const {
  const TomlValue* v = FindValue(impl_->root, path);
  if (v == nullptr) return TomlKind::kMissing;
  if (v->is_table()) return TomlKind::kTable;
  if (v->is_array()) return TomlKind::kArray;
  if (v->is_string()) return TomlKind::kString;
  if (v->is_integer()) return TomlKind::kInteger;
  if (v->is_boolean()) return TomlKind::kBoolean;
  return TomlKind::kOther;
}

std::optional<std::string> TomlDocument::StringAt(const KeyPath& path) const {
  const TomlValue* v = FindValue(impl_->root, path);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->as_string().str;
}

std::optional<std::int64_t> TomlDocument::IntegerAt(const KeyPath& path) const {
  const TomlValue* v = FindValue(impl_->root, path);
  if (v == nullptr || !v->is_integer()) return std::nullopt;
  return v->as_integer();
}

std::optional<std::vector<std::string>> TomlDocument::StringArrayAt(
    const KeyPath& path) const {
  const TomlValue* v = FindValue(impl_->root, path);
  if (v == nullptr || !v->is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const TomlValue& e : v->as_array()) {
    if (!e.is_string()) return std::nullopt;
    out.push_back(e.as_string().str);
  }
  return out;
}

int TomlDocument::LineOf(const KeyPath& path) const {
  return impl_->layout.LineOf(impl_->root, path);
}

std::vector<std::string> TomlDocument::ValueKeys(const KeyPath& table) const {
  const TomlValue* t = FindValue(impl_->root, table);
  if (t == nullptr || !t->is_table()) return {};
  std::vector<std::pair<size_t, std::string>> keyed;
  for (const auto& [key, value] : t->as_table()) {
    if (value.is_table() || IsArrayOfTables(value)) continue;
    keyed.emplace_back(impl_->layout.Offset(value.location()), key);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::string> keys;
  for (auto& [offset, key] : keyed) keys.push_back(std::move(key));
  return keys;
}

std::string TomlDocument::SourceText(const KeyPath& path) const {
  const TomlValue* v = FindValue(impl_->root, path);
  if (v == nullptr) return "";
  toml::source_location loc = v->location();
  return impl_->text.substr(impl_->layout.Offset(loc), loc.region());
}

std::string TomlDocument::Quote(std::string_view s) const {
  return QuoteIn(s, impl_->literal);
}

std::string TomlDocument::StringArray(
    const std::vector<std::string>& items) const {
  std::vector<std::string> quoted;
  for (const std::string& s : items) quoted.push_back(Quote(s));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

// Every existing table on the way to `table` must be one gpulet can add a
// key or a sub-table to: written as a [header] (or only implied by deeper
// headers), not inline, with dotted keys or as an array of tables.
absl::Status TomlDocument::Impl::CheckExtensible(const KeyPath& table) const {
  KeyPath prefix;
  const TomlValue* cur = &root;
  for (const std::string& key : table) {
    prefix.push_back(key);
    const auto& tab = cur->as_table();
    auto it = tab.find(key);
    if (it == tab.end()) return absl::OkStatus();
    cur = &it->second;
    std::string what;
    if (IsArrayOfTables(*cur)) {
      what = "an array of tables";
    } else if (!cur->is_table()) {
      std::string type = toml::stringize(cur->type());
      what = absl::StrCat(type.find_first_of("aeiou") == 0 ? "an " : "a ", type,
                          ", not a table");
    } else {
      switch (layout.FormOf(*cur, prefix)) {
        case TableForm::kInline:
          what = "an inline table";
          break;
        case TableForm::kDotted:
          what = "written with dotted keys";
          break;
        default:
          continue;
      }
    }
    return absl::FailedPreconditionError(
        absl::StrCat(Where(prefix), ": ", FormatPath(prefix, literal), " is ",
                     what, "; gpulet adds keys only to tables written as [",
                     FormatPath(prefix, literal),
                     "] sections: rewrite it so and run again"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> TomlDocument::Impl::Edited(
    const KeyPath& table, const std::string& key,
    const std::string& value_text) const {
  const TomlValue* t = FindValue(root, table);
  const std::string line =
      absl::StrCat(FormatKey(key, literal), " = ", value_text);
  if (t != nullptr && t->is_table() && t->contains(key)) {
    toml::source_location loc = t->as_table().at(key).location();
    std::string out = text;
    out.replace(layout.Offset(loc), loc.region(), value_text);
    return out;
  }
  GPULET_RETURN_IF_ERROR(CheckExtensible(table));
  if (table.empty()) return layout.InsertRootKey(text, line);
  if (t != nullptr && layout.FormOf(*t, table) == TableForm::kHeader) {
    return layout.InsertKey(text, table, line);
  }
  return layout.InsertSection(text, table, FormatPath(table, literal), {line});
}

absl::StatusOr<bool> TomlDocument::Set(const KeyPath& path,
                                       const std::string& value_text) {
  if (path.empty()) return absl::InvalidArgumentError("empty key path");
  KeyPath table(path.begin(), path.end() - 1);
  const std::string& key = path.back();
  GPULET_ASSIGN_OR_RETURN(const TomlValue wanted, ParseValue(value_text));

  if (const TomlValue* old = FindValue(impl_->root, path)) {
    if (old->is_table() || IsArrayOfTables(*old)) {
      return absl::FailedPreconditionError(
          absl::StrCat(impl_->Where(path), ": ", FormatKeyPath(path),
                       " is a table, not a value"));
    }
    if (SameValue(*old, wanted)) return false;
  }
  GPULET_ASSIGN_OR_RETURN(std::string text,
                          impl_->Edited(table, key, value_text));
  TomlValue expected = impl_->root;
  TableIn(expected, table)[key] = wanted;
  GPULET_RETURN_IF_ERROR(impl_->Commit(std::move(text), expected, path));
  return true;
}

absl::StatusOr<bool> TomlDocument::SetTable(
    const KeyPath& table,
    const std::vector<std::pair<std::string, std::string>>& entries) {
  if (table.empty() || entries.empty() || KindAt(table) != TomlKind::kMissing) {
    bool changed = false;
    for (const auto& [key, value_text] : entries) {
      KeyPath path = table;
      path.push_back(key);
      GPULET_ASSIGN_OR_RETURN(bool set, Set(path, value_text));
      changed = changed || set;
    }
    return changed;
  }
  GPULET_RETURN_IF_ERROR(impl_->CheckExtensible(table));
  TomlValue expected = impl_->root;
  TomlValue::table_type& added = TableIn(expected, table);
  std::vector<std::string> lines;
  for (const auto& [key, value_text] : entries) {
    GPULET_ASSIGN_OR_RETURN(added[key], ParseValue(value_text));
    lines.push_back(
        absl::StrCat(FormatKey(key, impl_->literal), " = ", value_text));
  }
  std::string text = impl_->layout.InsertSection(
      impl_->text, table, FormatPath(table, impl_->literal), lines);
  GPULET_RETURN_IF_ERROR(impl_->Commit(std::move(text), expected, table));
  return true;
}

}  // namespace gpulet::engineconfig
