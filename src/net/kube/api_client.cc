#include "src/net/kube/api_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/status_macros.h"

namespace gpulet::kube {

absl::StatusOr<std::unique_ptr<ApiClient>> ApiClient::Create(
    const config::ApiServerConfig& api, const ClientOptions& options,
    const ExecPluginOptions& exec, metrics::Registry* metrics) {
  TlsTransportOptions transport_options;
  transport_options.exec = exec;
  if (metrics != nullptr) {
    GPULET_ASSIGN_OR_RETURN(transport_options.metrics,
                            RequestMetrics::Register(*metrics));
  }
  GPULET_ASSIGN_OR_RETURN(std::unique_ptr<TlsTransport> transport,
                          TlsTransport::Create(api, transport_options));
  return std::unique_ptr<ApiClient>(
      new ApiClient(std::move(transport), options, api));
}

ApiClient::ApiClient(std::unique_ptr<TlsTransport> transport,
                     const ClientOptions& options,
                     const config::ApiServerConfig& api)
    : transport_(std::move(transport)),
      client_(*transport_, common::RealClock::Get(), options),
      server_(api.server),
      source_(api.source) {}

absl::StatusOr<std::unique_ptr<ApiClient>> MakeApiClient(
    const ApiClientOptions& options) {
  GPULET_ASSIGN_OR_RETURN(
      config::ApiServerConfig api,
      config::LoadApiServerConfig(options.kubeconfig, options.context,
                                  options.in_cluster));
  if (api.exec && !options.allow_exec_plugin) {
    return absl::FailedPreconditionError(absl::StrCat(
        api.source, ": user \"", api.exec->user,
        "\" authenticates with an exec credential plugin, which only "
        "kubectl-gpulet runs; give this component a client certificate or "
        "a token"));
  }
  return ApiClient::Create(api, options.client, options.exec, options.metrics);
}

}  // namespace gpulet::kube
