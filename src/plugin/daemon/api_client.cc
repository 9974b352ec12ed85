#include "src/plugin/daemon/api_client.h"

#include <utility>

#include "src/base/common/clock.h"
#include "src/net/kube/kubeconfig.h"
#include "src/net/kube/sleeper.h"
#include "src/net/kube/tls_transport.h"

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

ProcessApiClient::ProcessApiClient(std::string kubeconfig)
    : kubeconfig_(std::move(kubeconfig)) {}

absl::StatusOr<kube::Client*> ProcessApiClient::Get() {
  if (client_ != nullptr) return client_.get();
  absl::StatusOr<config::ApiServerConfig> api =
      config::LoadApiServerConfig(kubeconfig_);
  if (!api.ok()) return api.status();
  absl::StatusOr<std::unique_ptr<kube::TlsTransport>> transport =
      kube::TlsTransport::Create(*api);
  if (!transport.ok()) return transport.status();
  transport_ = *std::move(transport);
  client_ = std::make_unique<kube::Client>(
      *transport_, common::RealClock::Get(), kube::RealSleeper::Get(),
      ApiClientOptions());
  return client_.get();
}

}  // namespace gpulet::daemon
