#include "src/config/config_errors.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpulet::config::internal {

std::string JoinPath(absl::string_view parent, absl::string_view key) {
  if (parent.empty()) return std::string(key);
  return absl::StrCat(parent, ".", key);
}

std::string IndexPath(absl::string_view parent, size_t index) {
  return absl::StrCat(parent, "[", index, "]");
}

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

std::string Quote(absl::string_view s) {
  constexpr size_t kMax = 60;
  if (s.size() > kMax) {
    return absl::StrCat("\"", absl::CHexEscape(s.substr(0, kMax)), "...\"");
  }
  return absl::StrCat("\"", absl::CHexEscape(s), "\"");
}

std::string UnknownValue(absl::string_view value,
                         const std::vector<std::string>& names) {
  return absl::StrCat("unknown value ", Quote(value),
                      " (expected one of: ", absl::StrJoin(names, ", "), ")");
}

}  // namespace gpulet::config::internal
