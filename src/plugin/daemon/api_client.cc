#include "src/plugin/daemon/api_client.h"

#include <utility>

#include "src/base/common/status_macros.h"

namespace gpulet::daemon {
namespace {

// The process's API client: a GET per preferred allocation and a GET and
// a PATCH per Allocate for memory shares; client-go's 5 per second would
// make a burst of pods wait on the node agent (the extender's default is
// the same 50).
kube::ClientOptions ApiClientOptions() {
  kube::ClientOptions o;
  o.qps = 50;
  o.burst = 100;
  return o;
}

}  // namespace

ProcessApiClient::ProcessApiClient(std::string kubeconfig,
                                   metrics::Registry& metrics)
    : kubeconfig_(std::move(kubeconfig)), metrics_(metrics) {}

absl::StatusOr<kube::Client*> ProcessApiClient::Get() {
  if (api_ != nullptr) return &api_->client();
  kube::ApiClientOptions options;
  options.kubeconfig = kubeconfig_;
  options.client = ApiClientOptions();
  options.metrics = &metrics_;
  GPULET_ASSIGN_OR_RETURN(api_, kube::MakeApiClient(options));
  return &api_->client();
}

}  // namespace gpulet::daemon
