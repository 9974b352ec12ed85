#include "src/net/podresources/client.h"

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "podresources/v1/api.pb.h"
#include "src/net/h2/unary_client.h"

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

absl::Status Named(const absl::Status& status, const std::string& socket,
                   const char* call) {
  const absl::StatusCode code = status.code();
  return absl::Status(code, absl::StrCat("pod resources ", call, " on ", socket,
                                         ": ", absl::StatusCodeToString(code),
                                         ": ", status.message()));
}

// One call of v1.PodResourcesLister on its own connection, the reply parsed
// into `reply`.
absl::Status Call(const std::string& socket, absl::Duration timeout,
                  const char* method,
                  const google::protobuf::MessageLite& request,
                  google::protobuf::MessageLite& reply) {
  absl::StatusOr<std::string> bytes =
      h2::CallUnary(socket, absl::StrCat("/v1.PodResourcesLister/", method),
                    request.SerializeAsString(), timeout);
  if (!bytes.ok()) return Named(bytes.status(), socket, method);
  if (!reply.ParseFromString(*bytes)) {
    return Named(absl::InternalError("the reply does not parse"), socket,
                 method);
  }
  return absl::OkStatus();
}

}  // namespace

Client::Client(std::string socket_path, absl::Duration timeout)
    : socket_path_(std::move(socket_path)), timeout_(timeout) {}

absl::StatusOr<std::vector<Pod>> Client::List() const {
  v1::ListPodResourcesResponse reply;
  if (absl::Status s = Call(socket_path_, timeout_, "List",
                            v1::ListPodResourcesRequest(), reply);
      !s.ok()) {
    return s;
  }
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
  v1::AllocatableResourcesResponse reply;
  if (absl::Status s = Call(socket_path_, timeout_, "GetAllocatableResources",
                            v1::AllocatableResourcesRequest(), reply);
      !s.ok()) {
    return s;
  }
  return FromProto(reply.devices());
}

}  // namespace gpulet::podresources
