#include "src/net/registration/registrar.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "src/net/h2/unary_client.h"

namespace gpulet::registration {
namespace {

constexpr char kApiVersion[] = "v1beta1";
constexpr char kRegisterMethod[] = "/v1beta1.Registration/Register";

v1beta1::RegisterRequest BuildRequest(const RegisterParams& params) {
  v1beta1::RegisterRequest request;
  request.set_version(kApiVersion);
  request.set_endpoint(params.endpoint);
  request.set_resource_name(params.resource_name);
  v1beta1::DevicePluginOptions* options = request.mutable_options();
  options->set_pre_start_required(params.pre_start_required);
  options->set_get_preferred_allocation_available(
      params.get_preferred_allocation_available);
  return request;
}

}  // namespace

absl::Status Register(const RegisterParams& params, absl::Duration timeout,
                      const CancelCheck& cancelled) {
  if (cancelled && cancelled()) {
    return absl::CancelledError(absl::StrCat("register ", params.resource_name,
                                             ": cancelled (stopping)"));
  }
  // A connection of its own per attempt: after a kubelet restart an old
  // connection would point at a socket that no longer exists.
  absl::StatusOr<std::string> reply = h2::CallUnary(
      params.kubelet_socket, kRegisterMethod,
      BuildRequest(params).SerializeAsString(), timeout, cancelled);
  if (reply.ok()) return absl::OkStatus();
  const absl::StatusCode code = reply.status().code();
  return absl::Status(code, absl::StrCat("register ", params.resource_name,
                                         " with ", params.kubelet_socket, ": ",
                                         absl::StatusCodeToString(code), ": ",
                                         reply.status().message()));
}

}  // namespace gpulet::registration
