#include "src/model/allocation/allocate_cdi.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpulet::allocation {
namespace {

bool IsLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsAlnum(char c) { return IsLetter(c) || (c >= '0' && c <= '9'); }

// First and last character checked by the callers; `extra` are the
// punctuation characters allowed in between.
bool MiddleOk(const std::string& name, std::string_view extra) {
  for (size_t i = 1; i + 1 < name.size(); ++i) {
    const char c = name[i];
    if (!IsAlnum(c) && extra.find(c) == std::string_view::npos) return false;
  }
  return true;
}

constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

uint64_t Fnv1a(uint64_t hash, std::string_view bytes) {
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

// SplitMix64's finaliser: spreads FNV's weak high bits over the word.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

absl::Status ValidateCdiVendorOrClass(const std::string& what,
                                      const std::string& name) {
  if (name.empty() || !IsLetter(name.front()) || !IsAlnum(name.back()) ||
      !MiddleOk(name, "_.-")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid CDI ", what, " \"", name,
        "\": must start with a letter, end with a letter or digit and contain "
        "only letters, digits, '_', '.' and '-'"));
  }
  return absl::OkStatus();
}

absl::Status ValidateCdiDeviceName(const std::string& name) {
  if (name.empty() || !IsAlnum(name.front()) || !IsAlnum(name.back()) ||
      !MiddleOk(name, "_.:-")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid CDI device name \"", name,
        "\": must start and end with a letter or digit and contain only "
        "letters, digits, '_', '.', ':' and '-'"));
  }
  return absl::OkStatus();
}

std::string CdiQualifiedName(const std::string& vendor, const std::string& cls,
                             const std::string& name) {
  return absl::StrCat(vendor, "/", cls, "=", name);
}

std::string AllocationUid(const std::string& resource_name,
                          const std::vector<std::string>& device_ids) {
  std::vector<std::string> ids = device_ids;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  // Two FNV-1a streams with different offset bases; the separator byte
  // cannot occur in a device ID, so ("ab","c") and ("a","bc") differ.
  uint64_t hi = 0xcbf29ce484222325ULL;
  uint64_t lo = 0x84222325cbf29ce4ULL;
  hi = Fnv1a(hi, resource_name);
  lo = Fnv1a(lo, resource_name);
  for (const std::string& id : ids) {
    hi = Fnv1a(Fnv1a(hi, std::string_view("\0", 1)), id);
    lo = Fnv1a(Fnv1a(lo, std::string_view("\0", 1)), id);
  }
  hi = Mix(hi);
  lo = Mix(lo ^ hi);
  hi = (hi & ~0xf000ULL) | 0x8000ULL;            // version 8
  lo = (lo & ~(0x3ULL << 62)) | (0x2ULL << 62);  // variant 10
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi >> 32,
                         (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48,
                         lo & 0xffffffffffffULL);
}

absl::StatusOr<std::string> CdiAnnotationKey(const std::string& prefix,
                                             const std::string& plugin_name,
                                             const std::string& allocation_id) {
  constexpr size_t kMaxNameLength = 63;
  if (plugin_name.empty() || allocation_id.empty()) {
    return absl::InvalidArgumentError(
        "invalid CDI annotation key: empty plugin name or allocation ID");
  }
  std::string name = absl::StrCat(plugin_name, "_", allocation_id);
  std::replace(name.begin() + static_cast<std::ptrdiff_t>(plugin_name.size()),
               name.end(), '/', '_');
  if (name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid CDI annotation key \"", name, "\": longer than ",
                     kMaxNameLength, " characters"));
  }
  if (!IsAlnum(name.front()) || !IsAlnum(name.back()) ||
      !MiddleOk(name, "_.-")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid CDI annotation key \"", name,
        "\": must start and end with a letter or digit and contain only "
        "letters, digits, '_', '.' and '-'"));
  }
  return absl::StrCat(prefix, name);
}

std::vector<std::string> AdditionalCdiDevices(const std::string& vendor,
                                              bool gdrcopy, bool gds,
                                              bool mofed) {
  std::vector<std::string> devices;
  if (gdrcopy) devices.push_back(CdiQualifiedName(vendor, "gdrcopy", "all"));
  if (gds) devices.push_back(CdiQualifiedName(vendor, "gds", "all"));
  if (mofed) devices.push_back(CdiQualifiedName(vendor, "mofed", "all"));
  return devices;
}

}  // namespace gpulet::allocation
