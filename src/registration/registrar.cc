#include "src/registration/registrar.h"

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace gpulet::registration {
namespace {

constexpr char kApiVersion[] = "v1beta1";

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

absl::Status Register(const RegisterParams& params, absl::Duration timeout) {
  // A fresh channel per attempt: after a kubelet restart the old connection
  // points at a socket that no longer exists, and gRPC's own reconnect
  // backoff (seconds) would only delay the daemon's retries.
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(absl::StrCat("unix://", params.kubelet_socket),
                          grpc::InsecureChannelCredentials());
  std::unique_ptr<v1beta1::Registration::Stub> stub =
      v1beta1::Registration::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  v1beta1::Empty reply;
  grpc::Status status = stub->Register(&context, BuildRequest(params), &reply);
  if (status.ok()) return absl::OkStatus();
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  return absl::Status(code, absl::StrCat("register ", params.resource_name,
                                         " with ", params.kubelet_socket, ": ",
                                         absl::StatusCodeToString(code), ": ",
                                         status.error_message()));
}

}  // namespace gpulet::registration
