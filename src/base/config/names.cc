#include "src/base/config/names.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "src/base/common/status_macros.h"

namespace gpulet::config {
namespace {

constexpr size_t kMaxDnsSubdomainLength = 253;

bool IsLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool IsDecimal(absl::string_view s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool IsUuid(absl::string_view s) {
  size_t digits = 0;
  if (s.size() == 36) {
    for (size_t i = 0; i < s.size(); ++i) {
      bool dash_here = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash_here != (s[i] == '-')) return false;
      if (!dash_here) {
        if (!absl::ascii_isxdigit(static_cast<unsigned char>(s[i]))) {
          return false;
        }
        ++digits;
      }
    }
    return digits == 32;
  }
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string Quote(absl::string_view s) {
  return absl::StrCat("\"", absl::CHexEscape(s), "\"");
}

}  // namespace

bool IsDnsSubdomain(absl::string_view s) {
  if (s.empty() || s.size() > kMaxDnsSubdomainLength) return false;
  for (absl::string_view label : absl::StrSplit(s, '.')) {
    if (label.empty() || !IsLowerAlnum(label.front()) ||
        !IsLowerAlnum(label.back())) {
      return false;
    }
    for (char c : label) {
      if (!IsLowerAlnum(c) && c != '-') return false;
    }
  }
  return true;
}

absl::StatusOr<std::string> QualifyExtendedResourceName(
    absl::string_view name) {
  std::string full = name.find('/') != absl::string_view::npos
                         ? std::string(name)
                         : absl::StrCat(kResourceNamePrefix, "/", name);
  GPULET_RETURN_IF_ERROR(CheckExtendedResourceName(full));
  return full;
}

absl::Status CheckExtendedResourceName(absl::string_view name) {
  const size_t slash = name.find('/');
  const absl::string_view domain = name.substr(0, slash);
  const absl::string_view rest =
      slash == absl::string_view::npos ? "" : name.substr(slash + 1);
  if (slash == absl::string_view::npos || !IsDnsSubdomain(domain) ||
      rest.size() > kMaxResourceNameLength || !IsDnsSubdomain(rest)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resource name ", Quote(name),
        " is not <domain>/<name> with both lowercase DNS names (letters, "
        "digits, '-' and '.') and a name of at most ",
        kMaxResourceNameLength, " characters"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ParseMemoryUnit(absl::string_view text) {
  constexpr int64_t kMaxUnitMib = int64_t{1} << 20;  // 1 TiB
  absl::string_view count = text;
  int64_t scale = 0;
  if (absl::ConsumeSuffix(&count, "GiB")) {
    scale = 1024;
  } else if (absl::ConsumeSuffix(&count, "MiB")) {
    scale = 1;
  }
  int64_t n = 1;
  if (!count.empty() && (!IsDecimal(count) || !absl::SimpleAtoi(count, &n))) {
    scale = 0;
  }
  if (scale == 0 || n < 1 || n > kMaxUnitMib / scale) {
    return absl::InvalidArgumentError(absl::StrCat(
        Quote(text),
        " is not a memory unit: expected MiB, GiB or a size such as 512MiB "
        "or 2GiB, between 1MiB and 1024GiB"));
  }
  return n * scale;
}

std::string MemoryUnitName(int64_t unit_mib) {
  if (unit_mib == 1) return "MiB";
  if (unit_mib == 1024) return "GiB";
  if (unit_mib % 1024 == 0) return absl::StrCat(unit_mib / 1024, "GiB");
  return absl::StrCat(unit_mib, "MiB");
}

absl::StatusOr<std::string> QualifyResourceName(absl::string_view name) {
  const std::string prefix = absl::StrCat(kResourceNamePrefix, "/");
  std::string full = absl::StartsWith(name, prefix)
                         ? std::string(name)
                         : absl::StrCat(prefix, name);
  if (full.size() > kMaxResourceNameLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resource name ", Quote(full), " is ", full.size(),
        " characters long; at most ", kMaxResourceNameLength, " allowed"));
  }
  absl::string_view rest = absl::string_view(full).substr(prefix.size());
  if (!IsDnsSubdomain(rest)) {
    return absl::InvalidArgumentError(absl::StrCat(
        Quote(name), " is not a valid resource name: after \"", prefix,
        "\" it needs lowercase letters, digits, '-' and '.', starting and "
        "ending with a letter or digit"));
  }
  return full;
}

absl::Status CheckQualifiedResourceName(absl::string_view name) {
  absl::StatusOr<std::string> full = QualifyResourceName(name);
  if (!full.ok()) return full.status();
  if (*full != name) {
    return absl::InvalidArgumentError(absl::StrCat(Quote(name), " lacks the \"",
                                                   kResourceNamePrefix,
                                                   "/\" prefix (", *full, ")"));
  }
  return absl::OkStatus();
}

DeviceRefKind ClassifyDeviceRef(absl::string_view ref) {
  if (IsDecimal(ref)) return DeviceRefKind::kGpuIndex;
  std::vector<absl::string_view> parts =
      absl::StrSplit(ref, absl::MaxSplits(':', 1));
  if (parts.size() == 2 && IsDecimal(parts[0]) && IsDecimal(parts[1])) {
    return DeviceRefKind::kMigIndex;
  }
  if (absl::ConsumePrefix(&ref, "GPU-")) {
    return IsUuid(ref) ? DeviceRefKind::kGpuUuid : DeviceRefKind::kInvalid;
  }
  if (!absl::ConsumePrefix(&ref, "MIG-")) return DeviceRefKind::kInvalid;
  if (IsUuid(ref)) return DeviceRefKind::kMigUuid;
  std::vector<absl::string_view> mig = absl::StrSplit(ref, '/');
  if (mig.size() == 3 && absl::ConsumePrefix(&mig[0], "GPU-") &&
      IsUuid(mig[0]) && IsDecimal(mig[1]) && IsDecimal(mig[2])) {
    return DeviceRefKind::kMigUuid;
  }
  return DeviceRefKind::kInvalid;
}

absl::Status CheckCdiAnnotationPrefix(absl::string_view prefix) {
  absl::string_view domain = prefix;
  if (!absl::ConsumeSuffix(&domain, "/") || !IsDnsSubdomain(domain)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quote(prefix),
                     " is not a CDI annotation prefix: it needs a DNS "
                     "subdomain followed by '/', such as cdi.k8s.io/"));
  }
  return absl::OkStatus();
}

}  // namespace gpulet::config
