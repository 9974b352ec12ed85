#include "src/podresources/client.h"

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "podresources/v1/api.grpc.pb.h"

namespace gpulet::podresources {
namespace {

std::vector<Devices> FromProto(
    const google::protobuf::RepeatedPtrField<v1::ContainerDevices>& in) {
  std::vector<Devices> out;
  for (const v1::ContainerDevices& d : in) {
    out.push_back(Devices{d.resource_name(),
                          {d.device_ids().begin(), d.device_ids().end()}});
  }
  return out;
}

absl::Status FromGrpc(const grpc::Status& status, const std::string& socket,
                      const char* call) {
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  return absl::Status(code, absl::StrCat("pod resources ", call, " on ",
                                         socket, ": ",
                                         absl::StatusCodeToString(code), ": ",
                                         status.error_message()));
}

}  // namespace

Client::Client(std::string socket_path, absl::Duration timeout)
    : socket_path_(std::move(socket_path)), timeout_(timeout) {}

absl::StatusOr<std::vector<Pod>> Client::List() const {
  auto stub = v1::PodResourcesLister::NewStub(grpc::CreateChannel(
      absl::StrCat("unix://", socket_path_), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
  v1::ListPodResourcesResponse reply;
  grpc::Status status =
      stub->List(&context, v1::ListPodResourcesRequest(), &reply);
  if (!status.ok()) return FromGrpc(status, socket_path_, "List");
  std::vector<Pod> pods;
  for (const v1::PodResources& p : reply.pod_resources()) {
    Pod pod{p.namespace_(), p.name(), {}};
    for (const v1::ContainerResources& c : p.containers()) {
      pod.containers.push_back(Container{c.name(), FromProto(c.devices())});
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

absl::StatusOr<std::vector<Devices>> Client::Allocatable() const {
  auto stub = v1::PodResourcesLister::NewStub(grpc::CreateChannel(
      absl::StrCat("unix://", socket_path_), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
  v1::AllocatableResourcesResponse reply;
  grpc::Status status = stub->GetAllocatableResources(
      &context, v1::AllocatableResourcesRequest(), &reply);
  if (!status.ok()) {
    return FromGrpc(status, socket_path_, "GetAllocatableResources");
  }
  return FromProto(reply.devices());
}

}  // namespace gpulet::podresources
