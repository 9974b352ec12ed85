#include "src/base/config/config_errors.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpulet::config::internal {

absl::Status PathError(const Origins& origins, const std::string& path,
                       absl::string_view what) {
  std::string key = path;
  while (!key.empty()) {
    auto it = origins.find(key);
    if (it != origins.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(it->second.ToString(), ": ", path, ": ", what));
    }
    size_t cut = key.find_last_of(".[");
    key = cut == std::string::npos ? "" : key.substr(0, cut);
  }
  if (path.empty()) return absl::InvalidArgumentError(std::string(what));
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

std::string UnknownValue(absl::string_view value,
                         const std::vector<std::string>& names) {
  return absl::StrCat("unknown value ", Quote(value),
                      " (expected one of: ", absl::StrJoin(names, ", "), ")");
}

}  // namespace gpulet::config::internal
