#include "src/net/kube/impersonation.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gpulet::config {
namespace {

using Json = nlohmann::ordered_json;

// RFC 7230 "tchar": what a header name may hold besides letters and digits.
bool TokenChar(unsigned char c) {
  return absl::ascii_isalnum(c) ||
         absl::string_view("!#$&'*+-.^_`|~").find(static_cast<char>(c)) !=
             absl::string_view::npos;
}

// Why `value` cannot be a header value as it stands; "" when it can.
std::string Unsafe(absl::string_view value) {
  if (value.empty()) return "is empty";
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) return "contains a control character";
  }
  if (value.front() == ' ' || value.back() == ' ') {
    return "starts or ends with a blank (the server would trim it)";
  }
  return "";
}

class FieldReader {
 public:
  FieldReader(const std::string& source, const std::string& path)
      : source_(source), path_(path) {}

  absl::Status Error(absl::string_view field, absl::string_view why) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": ", path_, ".", field, ": ", why));
  }

  // A string field; "" when absent or null.
  absl::StatusOr<std::string> String(const Json& obj, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::string();
    if (!it->is_string()) return Error(key, "expected a string");
    return it->get<std::string>();
  }

  // A list of strings; empty when absent or null.
  absl::StatusOr<std::vector<std::string>> Strings(
      const Json& value, const std::string& field) const {
    std::vector<std::string> out;
    if (value.is_null()) return out;
    if (!value.is_array()) return Error(field, "expected a list of strings");
    for (size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_string()) {
        return Error(absl::StrCat(field, "[", i, "]"), "expected a string");
      }
      out.push_back(value[i].get<std::string>());
    }
    return out;
  }

 private:
  const std::string& source_;
  const std::string& path_;
};

}  // namespace

absl::StatusOr<Impersonation> ReadImpersonation(const Json& user,
                                                const std::string& source,
                                                const std::string& path) {
  FieldReader r(source, path);
  Impersonation out;
  absl::StatusOr<std::string> text = r.String(user, "as");
  if (!text.ok()) return text.status();
  out.user = *std::move(text);
  text = r.String(user, "as-uid");
  if (!text.ok()) return text.status();
  out.uid = *std::move(text);
  if (auto it = user.find("as-groups"); it != user.end()) {
    absl::StatusOr<std::vector<std::string>> groups =
        r.Strings(*it, "as-groups");
    if (!groups.ok()) return groups.status();
    out.groups = *std::move(groups);
  }
  auto extra = user.find("as-user-extra");
  if (extra != user.end() && !extra->is_null()) {
    if (!extra->is_object()) return r.Error("as-user-extra", "expected a map");
    for (const auto& [key, values] : extra->items()) {
      absl::StatusOr<std::vector<std::string>> list =
          r.Strings(values, absl::StrCat("as-user-extra.", key));
      if (!list.ok()) return list.status();
      out.extra[key] = *std::move(list);
    }
  }
  if (absl::Status s =
          ValidateImpersonation(out, absl::StrCat(source, ": ", path));
      !s.ok()) {
    return s;
  }
  return out;
}

absl::Status ValidateImpersonation(const Impersonation& imp,
                                   absl::string_view where) {
  auto invalid = [&](absl::string_view field, absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".", field, ": ", why));
  };
  if (imp.user.empty()) {
    if (!imp.empty()) {
      return invalid(!imp.uid.empty()      ? "as-uid"
                     : !imp.groups.empty() ? "as-groups"
                                           : "as-user-extra",
                     "needs `as`, the user to impersonate");
    }
    return absl::OkStatus();
  }
  if (std::string why = Unsafe(imp.user); !why.empty()) {
    return invalid("as", why);
  }
  if (std::string why = imp.uid.empty() ? "" : Unsafe(imp.uid); !why.empty()) {
    return invalid("as-uid", why);
  }
  for (size_t i = 0; i < imp.groups.size(); ++i) {
    if (std::string why = Unsafe(imp.groups[i]); !why.empty()) {
      return invalid(absl::StrCat("as-groups[", i, "]"), why);
    }
  }
  for (const auto& [key, values] : imp.extra) {
    if (key.empty()) return invalid("as-user-extra", "a key is empty");
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::string why = Unsafe(values[i]); !why.empty()) {
        return invalid(absl::StrCat("as-user-extra.", key, "[", i, "]"), why);
      }
    }
  }
  return absl::OkStatus();
}

std::string EscapeExtraKey(absl::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : key) {
    if (TokenChar(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string ImpersonationHeaders(const Impersonation& imp) {
  if (imp.user.empty()) return "";
  std::string out = absl::StrCat("Impersonate-User: ", imp.user, "\r\n");
  if (!imp.uid.empty())
    absl::StrAppend(&out, "Impersonate-Uid: ", imp.uid, "\r\n");
  for (const std::string& group : imp.groups) {
    absl::StrAppend(&out, "Impersonate-Group: ", group, "\r\n");
  }
  for (const auto& [key, values] : imp.extra) {
    for (const std::string& value : values) {
      absl::StrAppend(&out, "Impersonate-Extra-", EscapeExtraKey(key), ": ",
                      value, "\r\n");
    }
  }
  return out;
}

}  // namespace gpulet::config
