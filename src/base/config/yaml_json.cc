#include "src/base/config/yaml_json.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/base/yaml/nesting_depth.h"
#include "yaml-cpp/yaml.h"

namespace gpulet::config {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxDepth = 64;
constexpr size_t kMaxNodes = 100000;
constexpr char kStrTag[] = "tag:yaml.org,2002:str";

bool IsNull(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::optional<bool> AsBool(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

bool AllOf(absl::string_view s, bool (*pred)(unsigned char)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(static_cast<unsigned char>(c))) return false;
  }
  return true;
}
bool IsDec(unsigned char c) { return c >= '0' && c <= '9'; }
bool IsHex(unsigned char c) { return absl::ascii_isxdigit(c); }
bool IsOct(unsigned char c) { return c >= '0' && c <= '7'; }

// Integer per the core schema; nullopt when `s` is not an integer at all,
// an error when it is one that does not fit.
absl::StatusOr<std::optional<Json>> AsInt(const std::string& s) {
  absl::string_view digits = s;
  int base = 10;
  bool negative = false;
  if (absl::StartsWith(digits, "0x")) {
    digits.remove_prefix(2);
    base = 16;
    if (!AllOf(digits, IsHex)) return std::optional<Json>();
  } else if (absl::StartsWith(digits, "0o")) {
    digits.remove_prefix(2);
    base = 8;
    if (!AllOf(digits, IsOct)) return std::optional<Json>();
  } else {
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (!AllOf(digits, IsDec)) return std::optional<Json>();
  }
  std::string text(digits);
  errno = 0;
  unsigned long long magnitude = std::strtoull(text.c_str(), nullptr, base);
  if (errno == ERANGE) {
    return absl::InvalidArgumentError(
        absl::StrCat("integer out of range: ", s));
  }
  if (!negative) {
    if (magnitude <=
        static_cast<unsigned long long>(std::numeric_limits<int64_t>::max())) {
      return std::optional<Json>(Json(static_cast<int64_t>(magnitude)));
    }
    return std::optional<Json>(Json(static_cast<uint64_t>(magnitude)));
  }
  constexpr unsigned long long kMinMagnitude =
      static_cast<unsigned long long>(std::numeric_limits<int64_t>::max()) + 1;
  if (magnitude > kMinMagnitude) {
    return absl::InvalidArgumentError(
        absl::StrCat("integer out of range: ", s));
  }
  if (magnitude == kMinMagnitude) {
    return std::optional<Json>(Json(std::numeric_limits<int64_t>::min()));
  }
  return std::optional<Json>(Json(-static_cast<int64_t>(magnitude)));
}

// [-+]? ( . [0-9]+ | [0-9]+ ( . [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
bool LooksLikeFloat(absl::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && IsDec(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDec(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDec(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

std::optional<double> AsFloat(const std::string& s) {
  std::string lower = absl::AsciiStrToLower(s);
  if (lower == ".inf" || lower == "+.inf") {
    return std::numeric_limits<double>::infinity();
  }
  if (lower == "-.inf") return -std::numeric_limits<double>::infinity();
  if (lower == ".nan") return std::numeric_limits<double>::quiet_NaN();
  double value = 0;
  if (LooksLikeFloat(s) && absl::SimpleAtod(s, &value)) return value;
  return std::nullopt;
}

// The value a plain scalar stands for.
absl::StatusOr<Json> ResolvePlain(const std::string& s) {
  if (IsNull(s)) return Json(nullptr);
  if (std::optional<bool> b = AsBool(s)) return Json(*b);
  absl::StatusOr<std::optional<Json>> i = AsInt(s);
  if (!i.ok()) return i.status();
  if (i->has_value()) return **i;
  if (std::optional<double> f = AsFloat(s)) return Json(*f);
  return Json(s);
}

class Converter {
 public:
  explicit Converter(const std::string& source) : source_(source) {}

  absl::StatusOr<Json> Convert(const YAML::Node& node) {
    if (++nodes_ > kMaxNodes) {
      return Error(node, "document too large (alias expansion?)");
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return Json(nullptr);
      case YAML::NodeType::Scalar:
        return Scalar(node);
      case YAML::NodeType::Sequence:
        return Sequence(node);
      case YAML::NodeType::Map:
        return Map(node);
    }
    return Error(node, "unknown node type");
  }

 private:
  absl::Status Error(const YAML::Node& node, absl::string_view what) const {
    YAML::Mark mark = node.Mark();
    return absl::InvalidArgumentError(absl::StrCat(
        source_, ":", mark.line + 1, ":", mark.column + 1, ": ", what));
  }

  absl::StatusOr<Json> Scalar(const YAML::Node& node) const {
    const std::string& tag = node.Tag();
    if (tag == "!" || tag == kStrTag) return Json(node.Scalar());
    absl::StatusOr<Json> value = ResolvePlain(node.Scalar());
    if (!value.ok()) return Error(node, value.status().message());
    return value;
  }

  absl::StatusOr<Json> Sequence(const YAML::Node& node) {
    Json out = Json::array();
    for (const YAML::Node& item : node) {
      absl::StatusOr<Json> value = Convert(item);
      if (!value.ok()) return value.status();
      out.push_back(*std::move(value));
    }
    return out;
  }

  absl::StatusOr<Json> Map(const YAML::Node& node) {
    Json out = Json::object();
    for (const auto& entry : node) {
      const YAML::Node& key = entry.first;
      if (!key.IsScalar()) return Error(key, "map key is not a scalar");
      const std::string& name = key.Scalar();
      if (out.contains(name)) {
        return Error(key, absl::StrCat("duplicate key \"", name, "\""));
      }
      absl::StatusOr<Json> value = Convert(entry.second);
      if (!value.ok()) return value.status();
      out[name] = *std::move(value);
    }
    return out;
  }

  const std::string& source_;
  size_t nodes_ = 0;
};

// Whether a string must be quoted to read back as the same string.
bool NeedsQuotes(const std::string& s) {
  absl::StatusOr<Json> plain = ResolvePlain(s);
  if (!plain.ok() || !plain->is_string()) return true;
  if (!s.empty() &&
      (IsDec(s[0]) || s[0] == '-' || s[0] == '+' || s[0] == '.')) {
    return true;  // sexagesimal and other YAML 1.1 readings ("0:1", "1_000")
  }
  return false;
}

void Emit(YAML::Emitter& out, const Json& value) {
  switch (value.type()) {
    case Json::value_t::object:
      if (value.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        out << YAML::Key;
        if (NeedsQuotes(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        Emit(out, item);
      }
      out << YAML::EndMap;
      return;
    case Json::value_t::array:
      if (value.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const Json& item : value) Emit(out, item);
      out << YAML::EndSeq;
      return;
    case Json::value_t::string: {
      const std::string& s = value.get_ref<const std::string&>();
      if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
      out << s;
      return;
    }
    case Json::value_t::boolean:
      out << (value.get<bool>() ? "true" : "false");
      return;
    case Json::value_t::number_integer:
      out << value.get<int64_t>();
      return;
    case Json::value_t::number_unsigned:
      out << value.get<uint64_t>();
      return;
    case Json::value_t::number_float:
      out << value.dump();
      return;
    default:
      out << YAML::Null;
      return;
  }
}

}  // namespace

absl::StatusOr<nlohmann::ordered_json> YamlToJson(absl::string_view text,
                                                  const std::string& source) {
  absl::Status depth = yaml::CheckNestingDepth(text, kMaxDepth, source);
  if (!depth.ok()) return depth;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  try {
    Converter converter(source);
    return converter.Convert(root);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.what()));
  }
}

std::string JsonToYaml(const nlohmann::ordered_json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  Emit(out, value);
  std::string text = out.c_str();
  text += "\n";
  return text;
}

}  // namespace gpulet::config
