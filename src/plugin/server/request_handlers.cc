#include "src/plugin/server/request_handlers.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/model/pluginapi/preferred_request.h"

namespace gpulet::plugin {

using pluginapi::AllocateHandler;
using pluginapi::Device;
using pluginapi::DeviceSnapshot;
using pluginapi::PreferredHandler;
using pluginapi::PreferredRequest;
namespace {

// `status` with `prefix` before its message.
absl::Status Prefixed(const absl::Status& status, const std::string& prefix) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

absl::Status InvalidArgument(const std::string& prefix,
                             const std::string& reason) {
  return absl::InvalidArgumentError(absl::StrCat(prefix, reason));
}

// A handler's error: a bad request keeps `invalid` (NVIDIA's words), the
// rest (the API server did not answer in time) is no fault of the request.
absl::Status HandlerError(const absl::Status& status,
                          const std::string& invalid,
                          const std::string& other) {
  return Prefixed(status, status.code() == absl::StatusCode::kInvalidArgument
                              ? invalid
                              : other);
}

std::vector<std::string> ToVector(
    const google::protobuf::RepeatedPtrField<std::string>& ids) {
  return std::vector<std::string>(ids.begin(), ids.end());
}

}  // namespace

absl::Status HandleAllocate(const std::string& resource_name,
                            const DeviceSnapshot& snapshot,
                            const v1beta1::AllocateRequest& request,
                            const AllocateHandler& handler,
                            v1beta1::AllocateResponse* response) {
  response->Clear();
  const std::string prefix =
      absl::StrCat("invalid allocation request for \"", resource_name, "\": ");
  for (const v1beta1::ContainerAllocateRequest& container :
       request.container_requests()) {
    if (container.devices_ids().empty()) {
      return InvalidArgument(prefix, "container request has no device IDs");
    }
    for (const std::string& id : container.devices_ids()) {
      if (snapshot.Find(id) == nullptr) {
        return InvalidArgument(
            prefix, absl::StrCat("invalid request: unknown device: ", id));
      }
    }
    absl::StatusOr<v1beta1::ContainerAllocateResponse> answer =
        handler(snapshot, ToVector(container.devices_ids()));
    if (!answer.ok()) {
      return HandlerError(
          answer.status(), prefix,
          absl::StrCat("allocation for \"", resource_name, "\": "));
    }
    *response->add_container_responses() = *std::move(answer);
  }
  return absl::OkStatus();
}

absl::Status HandlePreferred(const std::string& resource_name,
                             const DeviceSnapshot& snapshot,
                             const v1beta1::PreferredAllocationRequest& request,
                             const PreferredHandler& handler,
                             v1beta1::PreferredAllocationResponse* response) {
  response->Clear();
  const std::string prefix = absl::StrCat(
      "invalid preferred allocation request for \"", resource_name, "\": ");
  for (const v1beta1::ContainerPreferredAllocationRequest& container :
       request.container_requests()) {
    absl::StatusOr<PreferredRequest> valid =
        ValidatePreferred(snapshot, ToVector(container.available_deviceids()),
                          ToVector(container.must_include_deviceids()),
                          container.allocation_size());
    if (!valid.ok()) return Prefixed(valid.status(), prefix);
    absl::StatusOr<std::vector<std::string>> answer =
        handler(snapshot, valid->available, valid->must_include, valid->size);
    if (!answer.ok()) {
      return HandlerError(
          answer.status(), prefix,
          absl::StrCat("preferred allocation for \"", resource_name, "\": "));
    }
    absl::Status checked = CheckPreferredAnswer(*valid, *answer);
    if (!checked.ok()) {
      return Prefixed(checked, absl::StrCat("preferred allocation for \"",
                                            resource_name, "\": "));
    }
    auto* out = response->add_container_responses();
    for (std::string& id : *answer) out->add_deviceids(std::move(id));
  }
  return absl::OkStatus();
}

v1beta1::ListAndWatchResponse ToListAndWatchResponse(
    const DeviceSnapshot& snapshot) {
  v1beta1::ListAndWatchResponse response;
  for (const Device& d : snapshot.devices) {
    v1beta1::Device* out = response.add_devices();
    out->set_id(d.id);
    out->set_health(d.healthy ? kHealthy : kUnhealthy);
    for (int64_t node : d.numa_nodes) {
      out->mutable_topology()->add_nodes()->set_id(node);
    }
  }
  return response;
}

}  // namespace gpulet::plugin
