#include "src/model/sharing/unit_id.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gpulet::sharing {
namespace {

constexpr std::string_view kUnitSeparator = "::m";

}  // namespace

std::string MemoryUnitId(std::string_view gpu_uuid, int64_t k) {
  return absl::StrCat(std::string(gpu_uuid), std::string(kUnitSeparator), k);
}

bool ParseMemoryUnitId(std::string_view id, std::string* gpu_uuid, int64_t* k) {
  const size_t sep = id.rfind(kUnitSeparator);
  if (sep == std::string_view::npos || sep == 0) return false;
  std::string_view digits = id.substr(sep + kUnitSeparator.size());
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  if (!absl::SimpleAtoi(absl::string_view(digits.data(), digits.size()), k)) {
    return false;
  }
  *gpu_uuid = std::string(id.substr(0, sep));
  return true;
}

}  // namespace gpulet::sharing
