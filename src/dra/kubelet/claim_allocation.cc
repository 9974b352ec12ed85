#include "src/dra/kubelet/claim_allocation.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/base/common/status_macros.h"
#include "src/dra/kubelet/quantity.h"

namespace gpulet::dra {
namespace {

using json = nlohmann::json;

absl::Status Bad(const ClaimRef& ref, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("claim ", ClaimName(ref), ": ", what));
}

// The member `key` of `object` when it is a string; "" when absent.
absl::StatusOr<std::string> StringField(const json& object, const char* key,
                                        const std::string& path,
                                        const ClaimRef& ref) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string())
    return Bad(ref, absl::StrCat(path, ".", key, " is not a string"));
  return it->get<std::string>();
}

absl::StatusOr<const json*> ArrayField(const json& object, const char* key,
                                       const std::string& path,
                                       const ClaimRef& ref) {
  static const json* const kEmpty = new json(json::array());
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return kEmpty;
  if (!it->is_array())
    return Bad(ref, absl::StrCat(path, ".", key, " is not a list"));
  return &*it;
}

absl::StatusOr<std::vector<std::string>> StringList(const json& object,
                                                    const char* key,
                                                    const std::string& path,
                                                    const ClaimRef& ref) {
  GPULET_ASSIGN_OR_RETURN(const json* list, ArrayField(object, key, path, ref));
  std::vector<std::string> out;
  for (const json& item : *list) {
    if (!item.is_string())
      return Bad(ref, absl::StrCat(path, ".", key, " holds a non-string"));
    out.push_back(item.get<std::string>());
  }
  return out;
}

absl::Status AddResult(const json& result, const std::string& path,
                       const ClaimRef& ref, const std::string& driver,
                       const std::string& pool,
                       std::vector<AllocatedDevice>& devices) {
  if (!result.is_object()) return Bad(ref, path + " is not an object");
  GPULET_ASSIGN_OR_RETURN(std::string result_driver,
                          StringField(result, "driver", path, ref));
  GPULET_ASSIGN_OR_RETURN(std::string result_pool,
                          StringField(result, "pool", path, ref));
  if (result_driver != driver || result_pool != pool) return absl::OkStatus();
  AllocatedDevice device;
  device.pool = result_pool;
  GPULET_ASSIGN_OR_RETURN(device.device,
                          StringField(result, "device", path, ref));
  if (device.device.empty()) return Bad(ref, path + ".device is empty");
  GPULET_ASSIGN_OR_RETURN(std::string request,
                          StringField(result, "request", path, ref));
  GPULET_ASSIGN_OR_RETURN(std::string share,
                          StringField(result, "shareID", path, ref));
  if (!share.empty()) device.share_id = share;
  if (auto consumed = result.find("consumedCapacity");
      consumed != result.end() && !consumed->is_null()) {
    if (!consumed->is_object()) {
      return Bad(ref, path + ".consumedCapacity is not an object");
    }
    if (auto memory = consumed->find("memory"); memory != consumed->end()) {
      absl::StatusOr<int64_t> bytes =
          memory->is_string() ? ParseQuantity(memory->get<std::string>())
                              : absl::InvalidArgumentError("not a string");
      if (!bytes.ok()) {
        return Bad(ref, absl::StrCat(path, ".consumedCapacity.memory: ",
                                     bytes.status().message()));
      }
      device.consumed_memory = *bytes;
    }
  }
  auto admin = result.find("adminAccess");
  device.admin_access =
      admin != result.end() && admin->is_boolean() && admin->get<bool>();
  for (AllocatedDevice& seen : devices) {
    if (seen.device == device.device && seen.share_id == device.share_id) {
      if (!request.empty()) seen.requests.push_back(request);
      return absl::OkStatus();
    }
  }
  if (!request.empty()) device.requests.push_back(request);
  devices.push_back(std::move(device));
  return absl::OkStatus();
}

absl::Status AddConfig(const json& config, const std::string& path,
                       const ClaimRef& ref, const std::string& driver,
                       std::vector<OpaqueConfig>& configs) {
  if (!config.is_object()) return Bad(ref, path + " is not an object");
  auto opaque = config.find("opaque");
  if (opaque == config.end() || opaque->is_null()) return absl::OkStatus();
  if (!opaque->is_object()) return Bad(ref, path + ".opaque is not an object");
  GPULET_ASSIGN_OR_RETURN(
      std::string config_driver,
      StringField(*opaque, "driver", path + ".opaque", ref));
  if (config_driver != driver) return absl::OkStatus();
  OpaqueConfig out;
  GPULET_ASSIGN_OR_RETURN(out.requests,
                          StringList(config, "requests", path, ref));
  GPULET_ASSIGN_OR_RETURN(std::string source,
                          StringField(config, "source", path, ref));
  out.from_class = source == "FromClass";
  auto parameters = opaque->find("parameters");
  if (parameters != opaque->end()) out.parameters = *parameters;
  configs.push_back(std::move(out));
  return absl::OkStatus();
}

}  // namespace

std::string ClaimName(const ClaimRef& ref) {
  return absl::StrCat(ref.namespace_name, "/", ref.name);
}

absl::StatusOr<ClaimAllocation> ReadAllocation(const nlohmann::json& claim,
                                               const ClaimRef& ref,
                                               const std::string& driver,
                                               const std::string& pool) {
  if (!claim.is_object()) return Bad(ref, "not a JSON object");
  const json& metadata = claim.value("metadata", json::object());
  if (!metadata.is_object()) return Bad(ref, "metadata is not an object");
  GPULET_ASSIGN_OR_RETURN(std::string uid,
                          StringField(metadata, "uid", "metadata", ref));
  if (uid != ref.uid) {
    return Bad(ref, absl::StrCat("metadata.uid is \"", uid, "\", not \"",
                                 ref.uid, "\" (deleted and recreated?)"));
  }
  const json* devices = nullptr;
  if (auto status = claim.find("status");
      status != claim.end() && status->is_object()) {
    if (auto allocation = status->find("allocation");
        allocation != status->end() && allocation->is_object()) {
      auto it = allocation->find("devices");
      if (it != allocation->end() && it->is_object()) devices = &*it;
    }
  }
  if (devices == nullptr)
    return Bad(ref, "status.allocation.devices is not set (not allocated)");
  ClaimAllocation out;
  const std::string base = "status.allocation.devices";
  GPULET_ASSIGN_OR_RETURN(const json* results,
                          ArrayField(*devices, "results", base, ref));
  for (size_t i = 0; i < results->size(); ++i) {
    GPULET_RETURN_IF_ERROR(AddResult((*results)[i],
                                     absl::StrCat(base, ".results[", i, "]"),
                                     ref, driver, pool, out.devices));
  }
  GPULET_ASSIGN_OR_RETURN(const json* configs,
                          ArrayField(*devices, "config", base, ref));
  for (size_t i = 0; i < configs->size(); ++i) {
    GPULET_RETURN_IF_ERROR(AddConfig((*configs)[i],
                                     absl::StrCat(base, ".config[", i, "]"),
                                     ref, driver, out.configs));
  }
  return out;
}

}  // namespace gpulet::dra
