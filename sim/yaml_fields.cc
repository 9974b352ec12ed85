#include "sim/yaml_fields.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpulet::sim::yaml {
namespace {

using ::gpulet::yaml::Describe;
using ::gpulet::yaml::UnknownKey;

absl::Status ExpectScalar(const Ctx& ctx, const Field& field,
                          absl::string_view what) {
  if (field.node.IsScalar()) return absl::OkStatus();
  return FieldError(
      ctx, field,
      absl::StrCat("expected ", what, ", got ", Describe(field.node)));
}

// Parses decimal or 0x-hex digits without sign; false on junk or overflow.
bool ParseUnsigned(absl::string_view s, uint64_t* out) {
  int base = 10;
  if (absl::ConsumePrefix(&s, "0x") || absl::ConsumePrefix(&s, "0X")) {
    base = 16;
  }
  if (s.empty()) return false;
  uint64_t value = 0;
  for (char c : s) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (base == 16 &&
               absl::ascii_isxdigit(static_cast<unsigned char>(c))) {
      digit = absl::ascii_tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    } else {
      return false;
    }
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / base) {
      return false;
    }
    value = value * base + digit;
  }
  *out = value;
  return true;
}

// Adds "a" or "a-b" to `seen`; false when malformed.
bool AddRange(absl::string_view item, unsigned max_value,
              std::vector<bool>* seen, std::string* why) {
  item = absl::StripAsciiWhitespace(item);
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(item, absl::MaxSplits('-', 1));
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool is_range = item.find('-') != absl::string_view::npos;
  if (!ParseUnsigned(absl::StripAsciiWhitespace(parts.first), &lo) ||
      (is_range &&
       !ParseUnsigned(absl::StripAsciiWhitespace(parts.second), &hi))) {
    *why = absl::StrCat("\"", absl::CHexEscape(item),
                        "\" is not a number or a range like 0-63");
    return false;
  }
  if (!is_range) hi = lo;
  if (lo > hi) {
    *why = absl::StrCat("range ", lo, "-", hi, " is reversed");
    return false;
  }
  if (hi > max_value) {
    *why = absl::StrCat(hi, " exceeds the maximum ", max_value);
    return false;
  }
  for (uint64_t i = lo; i <= hi; ++i) (*seen)[i] = true;
  return true;
}

}  // namespace

absl::Status ErrorAt(const Ctx& ctx, const YAML::Mark& mark,
                     absl::string_view path, absl::string_view what) {
  std::string where = ctx.source;
  if (!mark.is_null()) {
    absl::StrAppend(&where, ":", mark.line + 1, ":", mark.column + 1);
  }
  if (!path.empty()) absl::StrAppend(&where, ": ", path);
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

absl::Status FieldError(const Ctx& ctx, const Field& field,
                        absl::string_view what) {
  return ErrorAt(ctx, field.node.Mark(), field.path, what);
}

absl::StatusOr<MapView> MapView::Read(const Ctx& ctx, const Field& field,
                                      const std::vector<std::string>& allowed) {
  MapView view(&ctx, field);
  if (field.node.IsNull()) return view;
  if (!field.node.IsMap()) {
    return FieldError(
        ctx, field, absl::StrCat("expected a map, got ", Describe(field.node)));
  }
  for (auto it = field.node.begin(); it != field.node.end(); ++it) {
    // yaml-cpp's iterator hands out a temporary pair: copy, never bind.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      return ErrorAt(
          ctx, key.Mark(), field.path,
          absl::StrCat("map keys must be strings, got ", Describe(key)));
    }
    const std::string& name = key.Scalar();
    std::string path = JoinPath(field.path, name);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return ErrorAt(ctx, key.Mark(), path, UnknownKey(name, allowed));
    }
    for (const auto& entry : view.entries_) {
      if (entry.first == name) {
        return ErrorAt(ctx, key.Mark(), path, "duplicate key");
      }
    }
    view.entries_.emplace_back(name, value);
  }
  return view;
}

std::optional<Field> MapView::Find(absl::string_view key) const {
  for (const auto& [name, value] : entries_) {
    if (name == key) return Field{value, JoinPath(self_.path, key)};
  }
  if (fallback_ != nullptr) return fallback_->Find(key);
  return std::nullopt;
}

absl::StatusOr<Field> MapView::Require(absl::string_view key) const {
  std::optional<Field> field = Find(key);
  if (field) return *std::move(field);
  return ErrorAt(*ctx_, self_.node.Mark(), JoinPath(self_.path, key),
                 "required key is missing");
}

absl::StatusOr<std::vector<Field>> ReadList(const Ctx& ctx, const Field& field,
                                            size_t max_items) {
  std::vector<Field> items;
  if (field.node.IsNull()) return items;
  if (!field.node.IsSequence()) {
    return FieldError(
        ctx, field,
        absl::StrCat("expected a list, got ", Describe(field.node)));
  }
  if (field.node.size() > max_items) {
    return FieldError(ctx, field,
                      absl::StrCat("has ", field.node.size(),
                                   " items; at most ", max_items, " allowed"));
  }
  for (size_t i = 0; i < field.node.size(); ++i) {
    items.push_back(Field{field.node[i], IndexPath(field.path, i)});
  }
  return items;
}

absl::StatusOr<std::string> ReadString(const Ctx& ctx, const Field& field,
                                       size_t max_len) {
  GPULET_RETURN_IF_ERROR(ExpectScalar(ctx, field, "a string"));
  const std::string& s = field.node.Scalar();
  if (s.size() > max_len) {
    return FieldError(
        ctx, field,
        absl::StrCat("is ", s.size(), " characters long; at most ", max_len,
                     " allowed"));
  }
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return FieldError(ctx, field, "contains a control character");
    }
  }
  return s;
}

absl::StatusOr<uint64_t> ReadUint(const Ctx& ctx, const Field& field,
                                  uint64_t min, uint64_t max) {
  GPULET_RETURN_IF_ERROR(ExpectScalar(ctx, field, "an integer"));
  uint64_t value = 0;
  if (!ParseUnsigned(field.node.Scalar(), &value)) {
    return FieldError(ctx, field,
                      absl::StrCat("expected a non-negative integer, got ",
                                   Describe(field.node)));
  }
  if (value < min || value > max) {
    return FieldError(
        ctx, field,
        absl::StrCat(value, " is out of range [", min, ", ", max, "]"));
  }
  return value;
}

absl::StatusOr<int64_t> ReadInt(const Ctx& ctx, const Field& field, int64_t min,
                                int64_t max) {
  GPULET_RETURN_IF_ERROR(ExpectScalar(ctx, field, "an integer"));
  absl::string_view s = field.node.Scalar();
  bool negative = absl::ConsumePrefix(&s, "-");
  uint64_t magnitude = 0;
  if (!ParseUnsigned(s, &magnitude) ||
      magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return FieldError(
        ctx, field,
        absl::StrCat("expected an integer, got ", Describe(field.node)));
  }
  int64_t value = static_cast<int64_t>(magnitude);
  if (negative) value = -value;
  if (value < min || value > max) {
    return FieldError(
        ctx, field,
        absl::StrCat(value, " is out of range [", min, ", ", max, "]"));
  }
  return value;
}

absl::StatusOr<bool> ReadBool(const Ctx& ctx, const Field& field) {
  GPULET_RETURN_IF_ERROR(ExpectScalar(ctx, field, "true or false"));
  std::string s = absl::AsciiStrToLower(field.node.Scalar());
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  return FieldError(
      ctx, field,
      absl::StrCat("expected true or false, got ", Describe(field.node)));
}

absl::StatusOr<uint64_t> ReadBytes(const Ctx& ctx, const Field& field,
                                   uint64_t max) {
  GPULET_RETURN_IF_ERROR(ExpectScalar(ctx, field, "a size"));
  absl::string_view s = field.node.Scalar();
  size_t digits_end = 0;
  while (digits_end < s.size() &&
         (absl::ascii_isdigit(static_cast<unsigned char>(s[digits_end])) ||
          s[digits_end] == '.')) {
    ++digits_end;
  }
  absl::string_view number = s.substr(0, digits_end);
  std::string unit =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(s.substr(digits_end)));
  const std::vector<std::pair<std::string, uint64_t>> units = {
      {"", 1},
      {"b", 1},
      {"kib", uint64_t{1} << 10},
      {"mib", uint64_t{1} << 20},
      {"gib", uint64_t{1} << 30},
      {"tib", uint64_t{1} << 40}};
  auto unit_it = std::find_if(units.begin(), units.end(),
                              [&](const auto& u) { return u.first == unit; });
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(number, absl::MaxSplits('.', 1));
  uint64_t whole = 0;
  bool ok = unit_it != units.end() && ParseUnsigned(parts.first, &whole) &&
            parts.second.size() <= 6 &&
            parts.second.find('.') == absl::string_view::npos;
  uint64_t fraction = 0;
  if (ok && !parts.second.empty()) ok = ParseUnsigned(parts.second, &fraction);
  if (!ok) {
    return FieldError(ctx, field,
                      absl::StrCat("expected a size such as 40GiB or 81559MiB "
                                   "(units B, KiB, MiB, GiB, TiB), got ",
                                   Describe(field.node)));
  }
  uint64_t scale = unit_it->second;
  if (whole > max / scale) {
    return FieldError(ctx, field, absl::StrCat("exceeds ", max, " bytes"));
  }
  uint64_t bytes = whole * scale;
  uint64_t denominator = 1;
  for (size_t i = 0; i < parts.second.size(); ++i) denominator *= 10;
  // scale <= 2^40 and fraction < 10^6 < 2^20, so this cannot overflow.
  bytes += fraction * scale / denominator;
  if (bytes > max) {
    return FieldError(ctx, field, absl::StrCat("exceeds ", max, " bytes"));
  }
  return bytes;
}

absl::StatusOr<std::vector<unsigned>> ReadIndexList(const Ctx& ctx,
                                                    const Field& field,
                                                    unsigned max_value) {
  std::vector<bool> seen(static_cast<size_t>(max_value) + 1, false);
  std::string why;
  if (field.node.IsScalar()) {
    for (absl::string_view item : absl::StrSplit(field.node.Scalar(), ',')) {
      if (!AddRange(item, max_value, &seen, &why)) {
        return FieldError(ctx, field, why);
      }
    }
  } else {
    GPULET_ASSIGN_OR_RETURN(std::vector<Field> items,
                            ReadList(ctx, field, max_value + size_t{1}));
    for (const Field& item : items) {
      GPULET_RETURN_IF_ERROR(ExpectScalar(ctx, item, "a number or range"));
      if (!AddRange(item.node.Scalar(), max_value, &seen, &why)) {
        return FieldError(ctx, item, why);
      }
    }
  }
  std::vector<unsigned> out;
  for (unsigned i = 0; i <= max_value; ++i) {
    if (seen[i]) out.push_back(i);
  }
  return out;
}

absl::StatusOr<size_t> MatchName(const Ctx& ctx, const Field& field,
                                 const std::vector<std::string>& names) {
  GPULET_RETURN_IF_ERROR(ExpectScalar(ctx, field, "a name"));
  for (size_t i = 0; i < names.size(); ++i) {
    if (absl::EqualsIgnoreCase(names[i], field.node.Scalar())) return i;
  }
  return FieldError(
      ctx, field,
      absl::StrCat("unknown value ", Describe(field.node),
                   " (expected one of: ", absl::StrJoin(names, ", "), ")"));
}

}  // namespace gpulet::sim::yaml
