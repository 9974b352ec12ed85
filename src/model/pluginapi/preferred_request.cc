#include "src/model/pluginapi/preferred_request.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace gpulet::pluginapi {
namespace {

std::vector<std::string> Unique(const std::vector<std::string>& ids) {
  std::vector<std::string> out;
  absl::flat_hash_set<std::string> seen;
  for (const std::string& id : ids) {
    if (seen.insert(id).second) out.push_back(id);
  }
  return out;
}

}  // namespace

absl::StatusOr<PreferredRequest> ValidatePreferred(
    const DeviceSnapshot& snapshot, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation_size must be at least 1, got ", size));
  }
  PreferredRequest request{Unique(available), Unique(must_include), size};
  for (const std::string& id : request.available) {
    if (snapshot.Find(id) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown device: ", id));
    }
  }
  const absl::flat_hash_set<std::string> available_set(
      request.available.begin(), request.available.end());
  for (const std::string& id : request.must_include) {
    if (!available_set.contains(id)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "must_include_deviceIDs entry ", id, " is not in available_deviceIDs",
          snapshot.Find(id) == nullptr ? " (unknown device)" : ""));
    }
  }
  if (request.must_include.size() > static_cast<size_t>(size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "must_include_deviceIDs holds ", request.must_include.size(),
        " devices, more than allocation_size ", size));
  }
  if (static_cast<size_t>(size) > request.available.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation_size ", size, " exceeds the ",
                     request.available.size(), " available devices"));
  }
  return request;
}

absl::Status CheckPreferredAnswer(const PreferredRequest& request,
                                  const std::vector<std::string>& answer) {
  if (answer.size() != static_cast<size_t>(request.size)) {
    return absl::InternalError(
        absl::StrCat("preferred allocation policy chose ", answer.size(),
                     " devices, not ", request.size));
  }
  const absl::flat_hash_set<std::string> available(request.available.begin(),
                                                   request.available.end());
  absl::flat_hash_set<std::string> chosen;
  for (const std::string& id : answer) {
    if (!available.contains(id)) {
      return absl::InternalError(absl::StrCat(
          "preferred allocation policy chose unavailable device ", id));
    }
    if (!chosen.insert(id).second) {
      return absl::InternalError(
          absl::StrCat("preferred allocation policy chose ", id, " twice"));
    }
  }
  for (const std::string& id : request.must_include) {
    if (!chosen.contains(id)) {
      return absl::InternalError(absl::StrCat(
          "preferred allocation policy left out must-include device ", id));
    }
  }
  return absl::OkStatus();
}

}  // namespace gpulet::pluginapi
