#include "src/dra/slices/publisher.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"
#include "src/net/kube/api_path.h"

namespace gpulet::draslice {
namespace {

using Json = nlohmann::json;

// Conflicts with another writer are retried this many times in all.
constexpr int kAttempts = 4;

absl::StatusOr<std::string> SlicePath(const std::string& name) {
  GPULET_RETURN_IF_ERROR(kube::ValidateName("ResourceSlice name", name));
  return absl::StrCat(kResourceSlicesPath, "/", name);
}

std::string NameOf(const Json& object) {
  return object.value("/metadata/name"_json_pointer, std::string());
}

int64_t GenerationOf(const Json& slice) {
  const Json::json_pointer at("/spec/pool/generation");
  return slice.contains(at) && slice[at].is_number_integer()
             ? slice[at].get<int64_t>()
             : -1;
}

bool Retriable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kAborted ||
         status.code() == absl::StatusCode::kAlreadyExists ||
         status.code() == absl::StatusCode::kNotFound;
}

}  // namespace

std::string NodeSlicesSelector(const std::string& node,
                               const std::string& driver) {
  return absl::StrCat("spec.nodeName=", node, ",spec.driver=", driver);
}

Json ComparableSpec(const Json& spec) {
  if (spec.is_array()) {
    Json out = Json::array();
    for (const Json& item : spec) out.push_back(ComparableSpec(item));
    return out;
  }
  if (!spec.is_object()) return spec;
  Json out = Json::object();
  for (const auto& [key, value] : spec.items()) {
    if (key == "timeAdded") continue;
    Json reduced = ComparableSpec(value);
    if ((reduced.is_array() || reduced.is_object()) && reduced.empty()) {
      continue;
    }
    out[key] = std::move(reduced);
  }
  return out;
}

Publisher::Publisher(kube::Client& client, SliceOptions options)
    : client_(client), options_(std::move(options)) {}

int64_t Publisher::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

absl::Status Publisher::Publish(const NodeDevices& devices,
                                std::stop_token stop) {
  absl::MutexLock lock(&mu_);
  absl::Status status;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    status = PublishOnce(devices, stop);
    if (!Retriable(status)) return status;
    GPULET_VLOG(1) << "ResourceSlices of node " << options_.node_name
                   << " changed while publishing (" << status.message()
                   << "); listing again";
  }
  return status;
}

absl::Status Publisher::PublishOnce(const NodeDevices& devices,
                                    std::stop_token stop) {
  GPULET_ASSIGN_OR_RETURN(
      kube::ListResult listed,
      client_.List(kResourceSlicesPath,
                   {.field_selector = NodeSlicesSelector(options_.node_name,
                                                         options_.driver)},
                   stop));
  std::map<std::string, Json> existing;
  int64_t highest = generation_;
  for (Json& slice : listed.items) {
    highest = std::max(highest, GenerationOf(slice));
    existing.emplace(NameOf(slice), std::move(slice));
  }

  // Unchanged when the slices there, at their own generation, are what
  // would be built now.
  GPULET_ASSIGN_OR_RETURN(
      std::vector<Json> wanted,
      BuildSlices(devices, options_, std::max<int64_t>(highest, 0)));
  bool same = !existing.empty() && existing.size() == wanted.size();
  for (const Json& slice : wanted) {
    if (!same) break;
    auto it = existing.find(NameOf(slice));
    same = it != existing.end() &&
           ComparableSpec(it->second["spec"]) == ComparableSpec(slice["spec"]);
  }
  if (same) {
    generation_ = highest;
    return absl::OkStatus();
  }

  const int64_t generation = highest + 1;
  GPULET_ASSIGN_OR_RETURN(wanted, BuildSlices(devices, options_, generation));
  for (Json& slice : wanted) {
    const std::string name = NameOf(slice);
    GPULET_ASSIGN_OR_RETURN(std::string path, SlicePath(name));
    auto it = existing.find(name);
    if (it == existing.end()) {
      GPULET_RETURN_IF_ERROR(
          client_.Create(kResourceSlicesPath, slice, stop).status());
      continue;
    }
    slice["metadata"]["resourceVersion"] =
        it->second["metadata"].value("resourceVersion", "");
    GPULET_RETURN_IF_ERROR(client_.Replace(path, slice, stop).status());
    existing.erase(it);
  }
  for (const auto& [name, slice] : existing) {
    GPULET_ASSIGN_OR_RETURN(std::string path, SlicePath(name));
    absl::Status deleted = client_.Delete(path, stop);
    if (!deleted.ok() && deleted.code() != absl::StatusCode::kNotFound) {
      return deleted;
    }
  }
  generation_ = generation;
  GPULET_LOG(INFO) << "published " << wanted.size() << " ResourceSlice(s) of "
                   << "node " << options_.node_name << " at generation "
                   << generation;
  return absl::OkStatus();
}

absl::Status Publisher::DeleteAll(std::stop_token stop) {
  absl::MutexLock lock(&mu_);
  GPULET_ASSIGN_OR_RETURN(
      kube::ListResult listed,
      client_.List(kResourceSlicesPath,
                   {.field_selector = NodeSlicesSelector(options_.node_name,
                                                         options_.driver)},
                   stop));
  for (const Json& slice : listed.items) {
    GPULET_ASSIGN_OR_RETURN(std::string path, SlicePath(NameOf(slice)));
    absl::Status deleted = client_.Delete(path, stop);
    if (!deleted.ok() && deleted.code() != absl::StatusCode::kNotFound) {
      return deleted;
    }
  }
  return absl::OkStatus();
}

}  // namespace gpulet::draslice
