#include "src/net/kube/api_path.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/status_macros.h"

namespace gpulet::kube {

std::string EscapeQueryValue(absl::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (unsigned char c : value) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' ||
        c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string WithQuery(absl::string_view path, const QueryParams& params) {
  std::string out(path);
  char sep = '?';
  for (const auto& [key, value] : params) {
    if (value.empty()) continue;
    absl::StrAppend(&out, std::string(1, sep), EscapeQueryValue(key), "=",
                    EscapeQueryValue(value));
    sep = '&';
  }
  return out;
}

absl::Status ValidateName(absl::string_view kind, absl::string_view name) {
  bool ok = !name.empty() && name.size() <= 253 &&
            absl::ascii_isalnum(static_cast<unsigned char>(name.front())) &&
            absl::ascii_isalnum(static_cast<unsigned char>(name.back()));
  for (unsigned char c : name) {
    ok = ok && ((absl::ascii_isalnum(c) && !absl::ascii_isupper(c)) ||
                c == '-' || c == '.');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      kind, " \"", absl::CHexEscape(name.substr(0, 64)),
      "\" is not a valid Kubernetes name (lowercase letters, digits, '-' "
      "and '.', at most 253 characters)"));
}

absl::StatusOr<std::string> NodePath(absl::string_view name) {
  GPULET_RETURN_IF_ERROR(ValidateName("node name", name));
  return absl::StrCat("/api/v1/nodes/", name);
}

absl::StatusOr<std::string> PodsPath(absl::string_view ns) {
  if (ns.empty()) return std::string("/api/v1/pods");
  GPULET_RETURN_IF_ERROR(ValidateName("namespace", ns));
  return absl::StrCat("/api/v1/namespaces/", ns, "/pods");
}

absl::StatusOr<std::string> PodPath(absl::string_view ns,
                                    absl::string_view name) {
  GPULET_RETURN_IF_ERROR(ValidateName("namespace", ns));
  GPULET_RETURN_IF_ERROR(ValidateName("pod name", name));
  return absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name);
}

absl::StatusOr<std::string> PodBindingPath(absl::string_view ns,
                                           absl::string_view name) {
  GPULET_ASSIGN_OR_RETURN(std::string pod, PodPath(ns, name));
  return absl::StrCat(pod, "/binding");
}

std::string PodsOnNodeSelector(absl::string_view node) {
  return absl::StrCat("spec.nodeName=", node);
}

}  // namespace gpulet::kube
