#include "src/cluster/extender/names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gpulet::extender {
namespace {

bool LowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])? of any length.
bool IsLabelText(absl::string_view s) {
  if (s.empty() || !LowerAlnum(s.front()) || !LowerAlnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!LowerAlnum(c) && c != '-') return false;
  }
  return true;
}

absl::Status Invalid(absl::string_view field, absl::string_view name,
                     absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": \"", absl::CHexEscape(name.substr(0, 64)),
                   name.size() > 64 ? "..." : "", "\" is not a valid ", rule));
}

}  // namespace

bool IsDns1123Label(absl::string_view name) {
  return name.size() <= 63 && IsLabelText(name);
}

bool IsDns1123Subdomain(absl::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (!IsLabelText(label)) return false;
  }
  return true;
}

absl::Status CheckSubdomain(absl::string_view field, absl::string_view name) {
  if (IsDns1123Subdomain(name)) return absl::OkStatus();
  return Invalid(field, name,
                 "name (DNS-1123 subdomain: lowercase letters, digits, '-' "
                 "and '.', at most 253 characters)");
}

absl::Status CheckLabel(absl::string_view field, absl::string_view name) {
  if (IsDns1123Label(name)) return absl::OkStatus();
  return Invalid(field, name,
                 "name (DNS-1123 label: lowercase letters, digits and '-', "
                 "at most 63 characters)");
}

absl::Status CheckUid(absl::string_view field, absl::string_view uid) {
  bool ok = !uid.empty() && uid.size() <= kMaxUidBytes;
  for (char c : uid) {
    ok = ok && absl::ascii_isgraph(static_cast<unsigned char>(c));
  }
  if (ok) return absl::OkStatus();
  return Invalid(
      field, uid,
      absl::StrCat("uid (1 to ", kMaxUidBytes, " printable characters)"));
}

}  // namespace gpulet::extender
