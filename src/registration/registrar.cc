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

absl::Status Register(const RegisterParams& params, absl::Duration timeout,
                      const CancelCheck& cancelled) {
  if (cancelled && cancelled()) {
    return absl::CancelledError(absl::StrCat("register ", params.resource_name,
                                             ": cancelled (stopping)"));
  }
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
  grpc::Status status;
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1beta1::Empty>> call =
      stub->AsyncRegister(&context, BuildRequest(params), &cq);
  int tag = 0;
  call->Finish(&reply, &status, &tag);
  bool cancel_sent = false;
  while (true) {
    void* got = nullptr;
    bool ok = false;
    if (!cancelled) {
      cq.Next(&got, &ok);
      break;
    }
    grpc::CompletionQueue::NextStatus next = cq.AsyncNext(
        &got, &ok,
        std::chrono::system_clock::now() + std::chrono::milliseconds(50));
    if (next != grpc::CompletionQueue::TIMEOUT) break;
    if (!cancel_sent && cancelled()) {
      context.TryCancel();  // the Finish event follows with CANCELLED
      cancel_sent = true;
    }
  }
  cq.Shutdown();
  void* ignored_tag;
  bool ignored_ok;
  while (cq.Next(&ignored_tag, &ignored_ok)) {
  }
  if (status.ok()) return absl::OkStatus();
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  return absl::Status(code, absl::StrCat("register ", params.resource_name,
                                         " with ", params.kubelet_socket, ": ",
                                         absl::StatusCodeToString(code), ": ",
                                         status.error_message()));
}

}  // namespace gpulet::registration
